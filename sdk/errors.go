package sdk

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// UpstreamError writes the output of an error hook: the gateway status for
// an upstream HTTP status (spec section 7) and a message. Adapters that
// have nothing provider-specific to say call it with the message they
// parsed from the provider's error body.
//
// Mapping: 400, 413, 422, 429, 503 and 529 keep their meaning; other 5xx
// are 502; 408, 504 and 524 are 524 (the provider timed out); 401 and 403
// are 502 with a fixed message, because they mean the gateway's provider
// credentials are wrong and some providers quote the rejected key; 404 is
// 502 (the provider does not serve the configured model); 402 is 503: the
// money the provider wants is the operator's, not the caller's (a client
// told 402 would top up its own credits for nothing), and another
// provider may serve the request (503 falls back).
func UpstreamError(out *Out, status int, msg string) {
	code := status
	switch {
	case status == 402:
		code = 503
		if msg == "" {
			msg = "upstream returned status 402"
		}
		msg = "the provider refused for lack of credit on the gateway's account with it: " + msg
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

// ErrorMessage is the message of an upstream error body: error.message
// (OpenAI, Anthropic, Gemini and most compatible servers), else a top-level
// message, else a short body that is not JSON (a proxy's plain-text
// answer).
func ErrorMessage(body []byte) string {
	if msg := Get(body, "error.message").Str; msg != "" {
		return msg
	}
	if msg := Get(body, "message").Str; msg != "" {
		return msg
	}
	if len(body) > 0 && len(body) < 300 && !gjson.ValidBytes(body) {
		return string(body)
	}
	return ""
}

// MapError is an error hook for providers whose statuses mean what the
// gateway's do: the upstream status (field 1) mapped by UpstreamError, with
// the message ErrorMessage finds in the body (field 2).
func MapError(in *In, out *Out) error {
	status, _ := strconv.Atoi(in.String(1))
	UpstreamError(out, status, ErrorMessage(in.Field(2)))
	return nil
}
