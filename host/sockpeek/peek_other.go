//go:build !unix

package sockpeek

import "errors"

// Supported reports whether Peek can look at a socket here.
const Supported = false

var (
	errIntr  = errors.New("unreachable")
	errAgain = errIntr
)

func recvPeek(int, []byte) (int, error) { return 0, errors.ErrUnsupported }
