package apierr

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCauseIsKeptButNotShown(t *testing.T) {
	cause := errors.New("disk full at /var/lib/x")
	cases := []struct {
		name      string
		err       *Error
		status    int
		wantCause error
	}{
		{"wrapped", Wrap(503, cause, "the charge could not be recorded"), 503, cause},
		{"unknown error becomes a 500", From(cause), 500, cause},
		{"an apierr passes through From", From(Wrap(422, io.EOF, "bad module")), 422, io.EOF},
		{"no cause", New(400, "bad"), 400, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err.Status != tc.status {
				t.Fatalf("status %d, want %d", tc.err.Status, tc.status)
			}
			if tc.wantCause != nil && !errors.Is(tc.err, tc.wantCause) {
				t.Fatalf("errors.Is lost the cause: %v", tc.err)
			}
			if tc.wantCause == nil && errors.Unwrap(tc.err) != nil {
				t.Fatalf("unexpected cause %v", errors.Unwrap(tc.err))
			}
			// The client's envelope never shows the cause.
			if env := string(tc.err.Envelope(nil)); strings.Contains(env, "disk full") || strings.Contains(env, "EOF") {
				t.Fatalf("cause leaked into the envelope: %s", env)
			}
		})
	}
}
