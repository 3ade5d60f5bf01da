//go:build !linux

package datasync

import (
	"errors"
	"os"
)

func fdatasync(f *os.File) error { return f.Sync() }

type ring struct{}

func newRing() (*ring, error) { return nil, errors.ErrUnsupported }
func (*ring) close() error    { return nil }

func (*ring) writeDatasync(*os.File, []byte, int64) (int, error) { return 0, errors.ErrUnsupported }
