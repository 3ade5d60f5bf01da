package demo

// Abandoned is the number of requests (of any kind, streamed or not) whose
// client — the gateway — went away while the server was still waiting its
// Delay before answering: what a gateway that cancels its upstream call
// when its own client hangs up leaves behind.
func (s *Server) Abandoned() int64 { return s.abandoned.Load() }
