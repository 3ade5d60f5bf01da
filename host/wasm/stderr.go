package wasm

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// guestStderr keeps the start of what a guest writes to stderr during one
// call, so that a trap can say why. A Rust panic (wasm32 cannot unwind)
// and a Go guest's runtime fatal error ("fatal error: out of memory")
// cannot become an error output: the guest writes its message to stderr,
// then traps, and without this the client's 502 read only "wasm error:
// unreachable". Bounded (a guest that writes megabytes costs nothing
// more), and emptied before each call so an earlier call's text is never
// shown for a later one.
type guestStderr struct{ buf []byte }

// maxStderr is how much of a call's stderr is kept.
const maxStderr = 1 << 10

func (g *guestStderr) Write(p []byte) (int, error) {
	if room := maxStderr - len(g.buf); room > 0 {
		g.buf = append(g.buf, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (g *guestStderr) reset() { g.buf = g.buf[:0] }

// line is the first line the guest wrote that says something, cut to a
// length a reason can carry; "" when it wrote nothing.
func (g *guestStderr) line() string {
	for _, l := range bytes.Split(g.buf, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			s := strings.ToValidUTF8(string(l), "�")
			if len(s) > maxStderrLine {
				cut := maxStderrLine
				for cut > 0 && !utf8.RuneStart(s[cut]) {
					cut--
				}
				s = s[:cut] + "…"
			}
			return s
		}
	}
	return ""
}

const maxStderrLine = 160

// trapError is a trap and the first line the guest wrote to stderr in
// that call: the text keeps the trap's first line first, the guest's line
// beside it (reasons keep one line), then the trap's stack.
type trapError struct {
	err   error
	wrote string
}

func (e *trapError) Error() string {
	first, rest, more := strings.Cut(e.err.Error(), "\n")
	s := first + " (the module wrote: " + e.wrote + ")"
	if more {
		s += "\n" + rest
	}
	return s
}

func (e *trapError) Unwrap() error { return e.err }
