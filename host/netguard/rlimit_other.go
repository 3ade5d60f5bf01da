//go:build !unix

package netguard

// RaiseFDLimit does nothing where descriptor limits are not POSIX rlimits.
func RaiseFDLimit() (uint64, error) { return FDLimit(), nil }

// FDLimit is a conservative guess where there is no RLIMIT_NOFILE.
func FDLimit() uint64 { return 1024 }
