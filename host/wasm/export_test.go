package wasm

// Encoders of the module rewrite, for tests that assemble a module.
var (
	AppendName = appendName
	AppendSLEB = appendSLEB
)
