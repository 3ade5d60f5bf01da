package pipeline_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/pipeline"
	"github.com/tidwall/gjson"
)

// TestRolesFromManifests: the host finds a plugin's part in the request
// flow by the roles its manifest declares, not by its name. A cache an
// account publishes under a name of its own runs last in that account's
// pipelines like the first-party response cache, with no host change; a
// provider's required moderation is the gateway's plugin of the
// moderation role, never an account's module standing in for it.
func TestRolesFromManifests(t *testing.T) {
	v := newEnv(t, "alpha", "beta")
	const acct = "acct_roles"
	if err := v.publishAs(acct, "my-cache", "1.0.0", manifest.RoleCache); err != nil {
		t.Fatal(err)
	}
	if err := v.publishAs(acct, "my-moderator", "1.0.0", manifest.RoleModeration); err != nil {
		t.Fatal(err)
	}
	build := func(account, plugins string, extra pipeline.Extra) *pipeline.Pipeline {
		t.Helper()
		p, aerr := v.run.BuildWith(account, "v/m", gjson.Parse(plugins), extra)
		if aerr != nil {
			t.Fatalf("build %s: %d %s", plugins, aerr.Status, aerr.Message)
		}
		t.Cleanup(p.Release)
		return p
	}

	t.Run("an account's cache runs last", func(t *testing.T) {
		p := build(acct, `[{"id":"my-cache"},{"id":"alpha"},{"id":"beta"}]`, pipeline.Extra{})
		if _, aerr := p.Pre(t.Context(), []byte(chat)); aerr != nil {
			t.Fatal(aerr)
		}
		if got := names(p); !slices.Equal(got, []string{"alpha", "beta", "my-cache"}) {
			t.Fatalf("stages %v, want the cache last", got)
		}
		if got := p.Role(manifest.RoleCache); got != "my-cache" {
			t.Fatalf("Role(cache) = %q, want my-cache", got)
		}
	})
	t.Run("another account does not see it", func(t *testing.T) {
		if got := v.reg.RolePlugin("acct_other", manifest.RoleCache); got != "" {
			t.Fatalf("RolePlugin of another account = %q", got)
		}
		if got := v.reg.RolePlugin(acct, manifest.RoleCache); got != "my-cache" {
			t.Fatalf("RolePlugin = %q, want my-cache", got)
		}
	})
	t.Run("required moderation is the gateway's", func(t *testing.T) {
		_, aerr := v.run.BuildWith(acct, "v/m", gjson.Parse(`[]`), pipeline.Extra{ModeratedBy: []string{"prov"}})
		if aerr == nil || aerr.Status != http.StatusServiceUnavailable {
			t.Fatalf("an account's moderation-role module stood in for the gateway's: %v", aerr)
		}
		if err := v.publish("moderation", "1.0.0"); err != nil {
			t.Fatal(err)
		}
		p := build(acct, `[{"id":"alpha"}]`, pipeline.Extra{ModeratedBy: []string{"prov"}})
		if _, aerr := p.Pre(t.Context(), []byte(chat)); aerr != nil {
			t.Fatal(aerr)
		}
		if got := names(p); !slices.Equal(got, []string{"alpha", "moderation"}) {
			t.Fatalf("stages %v, want alpha then the gateway's moderation", got)
		}
	})
}
