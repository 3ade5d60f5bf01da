package wasm

import (
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
)

// NewEngine keeps its own copy of the configuration: a caller that changes
// its maps or slices afterwards changes nothing a module sees.
func TestNewEngineCopiesConfig(t *testing.T) {
	cfg := Config{
		Secrets:       map[string]string{"KEY": "operator-value"},
		TenantSecrets: []string{"KEY"},
		Natives:       map[string]NativeHook{"n": {}},
		HTTP:          HTTPLimits{PrivateHosts: []string{"intranet:8080"}},
	}
	e := NewEngine(cfg)
	defer e.Close(t.Context())
	cfg.Secrets["KEY"] = "changed"
	cfg.TenantSecrets[0] = "OTHER"
	delete(cfg.Natives, "n")
	cfg.HTTP.PrivateHosts[0] = "elsewhere:1"

	tenant := &Module{Manifest: &manifest.Manifest{Grants: manifest.Grants{Secrets: []string{"KEY"}}}, account: "acct"}
	for _, tc := range []struct {
		what string
		ok   bool
	}{
		{"a secret's value", func() bool { v, err := e.secret(tenant, "KEY"); return err == nil && v == "operator-value" }()},
		{"the secrets tenants may use", func() bool { _, err := e.secret(tenant, "KEY"); return err == nil }()},
		{"the native hooks", func() bool { _, ok := e.cfg.Natives["n"]; return ok }()},
		{"the private hosts", e.cfg.HTTP.withDefaults().privateHost("intranet:8080")},
	} {
		if !tc.ok {
			t.Errorf("%s changed with the caller's Config", tc.what)
		}
	}
}
