//go:build !unix

package hangup

import "syscall"

const supported = false

func peekGone(syscall.RawConn) bool { return false }

func peekGoneNow(syscall.RawConn) bool { return false }
