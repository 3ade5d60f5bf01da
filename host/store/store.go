// Package store opens the gateway's single bbolt file. Every package that
// persists state (keys, ledger, modules) gets the same *bbolt.DB and owns
// its own top-level buckets, so there is one file to back up and one lock.
package store

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Open opens (creating if needed) the bbolt file at path.
func Open(path string) (*bolt.DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create directory: %w", err)
		}
	}
	// A timeout instead of blocking forever when a second gateway holds the
	// file lock: the operator gets an error that says what is wrong.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w (is another gateway using it?)", path, err)
	}
	return db, nil
}
