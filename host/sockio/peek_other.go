//go:build !unix

package sockio

import "errors"

var (
	errIntr  = errors.New("unreachable")
	errAgain = errIntr
)

func recvPeek(int, []byte) (int, error) { return 0, errors.ErrUnsupported }
