//go:build !linux

package datasync

import (
	"errors"
	"os"
)

func fdatasync(f *os.File) error { return f.Sync() }

type ring struct{}

func newRing() (*ring, error)           { return nil, errors.ErrUnsupported }
func (*ring) datasync(f *os.File) error { return f.Sync() }
func (*ring) close() error              { return nil }

func (*ring) writeDatasync(f *os.File, b []byte, off int64) (int, error) {
	if _, err := f.WriteAt(b, off); err != nil {
		return 0, err
	}
	return len(b), f.Sync()
}
