package store

import (
	"fmt"
	"path/filepath"
)

// Config chooses the store (the configuration's `store` section).
type Config struct {
	// Driver is "bbolt" (default) or "postgres".
	Driver string `yaml:"driver"`
	// Path is the bbolt file; default <data_dir>/switchyard.db.
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string (postgres://…); it may name
	// an environment variable as ${VAR} so the password stays out of the
	// file.
	DSN string `yaml:"dsn"`
}

// Open opens the configured store; dataDir is the default bbolt file's
// directory.
func Open(cfg Config, dataDir string) (DB, error) {
	switch cfg.Driver {
	case "", "bbolt":
		p := cfg.Path
		if p == "" {
			p = filepath.Join(dataDir, "switchyard.db")
		}
		return OpenBolt(p)
	}
	return nil, fmt.Errorf("store: unknown driver %q (want bbolt or postgres)", cfg.Driver)
}
