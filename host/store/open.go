package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
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
	case "postgres":
		if cfg.DSN == "" {
			return nil, fmt.Errorf("store: driver postgres needs store.dsn (postgres://user:password@host:5432/db)")
		}
		dsn, err := ExpandEnv(cfg.DSN)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return OpenPostgres(ctx, dsn, PostgresOptions{})
	}
	return nil, fmt.Errorf("store: unknown driver %q (want bbolt or postgres)", cfg.Driver)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandEnv replaces every ${VAR} in s by the environment variable VAR,
// which must be set. A bare $ stays as it is: a password may hold one.
func ExpandEnv(s string) (string, error) {
	var missing string
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("store: the dsn names ${%s}, which is not set in the environment", missing)
	}
	return out, nil
}
