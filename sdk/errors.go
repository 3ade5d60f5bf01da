package sdk

import "strconv"

// UpstreamError writes the output of an error hook: the gateway status for
// an upstream HTTP status (spec section 7) and a message. Adapters that
// have nothing provider-specific to say call it with the message they
// parsed from the provider's error body.
//
// Mapping: 400, 413, 422, 429, 503 and 529 keep their meaning; other 5xx
// are 502; 408, 504 and 524 are 524 (the provider timed out); 401 and 403
// are 502 with a fixed message, because they mean the gateway's provider
// credentials are wrong and some providers quote the rejected key; 404 is
// 502 (the provider does not serve the configured model).
func UpstreamError(out *Out, status int, msg string) {
	code := status
	switch {
	case status == 401 || status == 403:
		code, msg = 502, "the provider rejected the gateway's credentials"
	case status == 404:
		code = 502
		if msg == "" {
			msg = "the provider does not serve this model"
		}
	case status == 408 || status == 504 || status == 524:
		code = 524
	case status == 400 || status == 413 || status == 422 || status == 429 || status == 503 || status == 529:
	case status >= 500:
		code = 502
	case status >= 400:
		code = 400
	default:
		code = 502
	}
	if msg == "" {
		msg = "upstream returned status " + strconv.Itoa(status)
	}
	out.FieldString(strconv.Itoa(code))
	out.FieldString(msg)
}
