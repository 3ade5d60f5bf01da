// Package apierr is the error type every layer of the gateway returns to a
// caller. An error carries its HTTP status from where it is born, so the
// server never has to guess a status from a message.
package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is rendered as the spec's envelope (section 7):
// {"error":{"code":<status>,"message":...,"metadata":{...}}}.
type Error struct {
	Status   int            // HTTP status, equal to error.code in the body
	Message  string         // what a person can act on; never contains secrets
	Metadata map[string]any // optional error.metadata
	// Param is the request field at fault, when the error names one
	// (BadRequest's field): the Responses API's error.param. The chat
	// envelope has no such member; its message starts with the field.
	Param string
	// Retryable marks upstream failures after which another endpoint may be
	// tried (5xx, 429, 529, timeouts, connection errors).
	Retryable bool
	// RetryAfter, when set, is sent to the client as Retry-After: an
	// upstream's own Retry-After on a 429 or 503 is kept, not guessed.
	RetryAfter time.Duration
	// Cause is the internal error behind this one, for the log and for
	// errors.Is/As; it never reaches the client.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%d: %s: %v", e.Status, e.Message, e.Cause)
	}
	return fmt.Sprintf("%d: %s", e.Status, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Wrap builds an error whose message is for the client and whose cause is
// kept for the log.
func Wrap(status int, cause error, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// New builds an error with a formatted message.
func New(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// ClientClosed is the error of work ended because its client went away:
// 499, the status nginx logs for it (no response reaches the client; the
// status is for records, logs and a module's sub-request).
func ClientClosed() *Error { return &Error{Status: 499, Message: "client closed the request"} }

// BadRequest is the 400 every validator returns; field names the offending
// request field so the caller can fix it.
func BadRequest(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Status: http.StatusBadRequest, Message: msg, Param: field}
}

// From converts any error to *Error; unknown errors become a 500 whose message
// does not echo internals and whose Cause is err.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Message: "internal server error", Cause: err}
}

// Statuses of section 7 that net/http has no constant for.
const (
	StatusEdgeTimeout = 524 // provider request timed out
	StatusOverloaded  = 529 // provider temporarily overloaded
)

// Object is the envelope's error member: {"code","message","metadata"}.
// Stream error chunks carry it too.
func (e *Error) Object() []byte {
	b, _ := json.Marshal(errorObject{Code: e.Status, Message: e.Message, Metadata: e.Metadata})
	return b
}

// Envelope is the body of an error response (spec section 7), with the
// routing metadata (a JSON object) when the caller asked for it.
func (e *Error) Envelope(serviceMetadata json.RawMessage) []byte {
	b, _ := json.Marshal(envelope{Error: errorObject{Code: e.Status, Message: e.Message, Metadata: e.Metadata}, ServiceMetadata: serviceMetadata})
	return b
}

type envelope struct {
	Error           errorObject     `json:"error"`
	ServiceMetadata json.RawMessage `json:"service_metadata,omitempty"`
	UserID          *string         `json:"user_id"`
}

type errorObject struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}
