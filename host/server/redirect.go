package server

import "net/http"

// noRedirects is the upstream client's CheckRedirect: a provider's 3xx is
// answered to the gateway as it is, never followed. Following it would send
// the request again, prompt and all, to wherever the Location points, and
// with the provider's credential: net/http drops only Authorization and
// cookies on a redirect to another domain (and keeps even those on the same
// host at another port), so Anthropic's X-Api-Key and Gemini's
// X-Goog-Api-Key would go along. The 3xx then goes through upstreamError
// like any other non-2xx answer and reaches the client as a 502.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
