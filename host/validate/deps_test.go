package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// goTool is the go command, or "" when this machine has none to run.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	for _, root := range []string{os.Getenv("GOROOT"), runtime.GOROOT()} {
		if p := filepath.Join(root, "bin", "go"); root != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// TestVocabularyDeps: parsing a request links neither the ledger nor a
// store or Redis driver, and the wire format takes its usage vocabulary
// from host/usage, not from the ledger (issue 30 §5). Before, validate →
// route → wire → billing → store linked pgx and bbolt, and route linked
// go-redis for its shared sticky sessions.
func TestVocabularyDeps(t *testing.T) {
	goCmd := goTool()
	if goCmd == "" {
		t.Skip("no go command to list dependencies with")
	}
	const mod = "github.com/switchyard/switchyard/"
	cases := []struct {
		pkg       string
		forbidden []string
	}{
		{"host/validate", []string{"github.com/jackc/pgx", "go.etcd.io/bbolt", "github.com/redis/go-redis", mod + "host/billing", mod + "host/store"}},
		{"host/wire", []string{mod + "host/billing"}},
		{"host/route", []string{"github.com/redis/go-redis", mod + "host/billing"}},
	}
	for _, tc := range cases {
		t.Run(tc.pkg, func(t *testing.T) {
			out, err := exec.Command(goCmd, "list", "-deps", mod+tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			deps := strings.Fields(string(out))
			for _, f := range tc.forbidden {
				for _, dep := range deps {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s", tc.pkg, dep)
						break // one line per forbidden module
					}
				}
			}
		})
	}
}
