package credentials_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/credentials"
	"github.com/switchyard/switchyard/host/credentials/credtest"
)

// TestSigV4CredentialChain: with credential_chain, the keys come from the
// AWS SDK's chain — here a profile whose credential_process prints
// temporary credentials (the shared config's documented process format,
// docs.aws.amazon.com/sdkref/latest/guide/feature-process-credentials.html).
// Credentials that expire within 5 minutes are fetched again for the next
// request; others are kept; a failing process fails the request, not the
// start (a profile the file lacks fails the start). A fake Bedrock verifies each signature with the keys the process
// gave out then.
func TestSigV4CredentialChain(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "creds.json")
	script := filepath.Join(dir, "creds.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat "+creds+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config")
	if err := os.WriteFile(cfgFile, []byte("[profile switchyard-test]\ncredential_process = "+script+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	give := func(id, secret, token string, expires time.Duration) {
		doc := fmt.Sprintf(`{"Version":1,"AccessKeyId":%q,"SecretAccessKey":%q,"SessionToken":%q,"Expiration":%q}`,
			id, secret, token, time.Now().Add(expires).UTC().Format(time.RFC3339))
		if err := os.WriteFile(creds, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The keys the fake accepts now, as the process handed them out.
	var want [3]string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := credtest.VerifySigV4(r, b, want[0], want[1], want[2], time.Now()); err != nil {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, err.Error())
		}
	}))
	t.Cleanup(up.Close)

	s, err := credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4, Region: "us-east-1",
		CredentialChain: true, Profile: "switchyard-test", ConfigFile: cfgFile}, "", envOf(nil))
	if err != nil || s == nil {
		t.Fatalf("new: %v %v", s, err)
	}
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	steps := []struct {
		name    string
		give    [3]string // what the process prints before the request ("" : unchanged)
		expires time.Duration
		want    [3]string // the keys the request must be signed with
	}{
		{"first keys, expiring in 2 minutes", [3]string{"ASIAFIRST", "first-secret", "first-token"}, 2 * time.Minute, [3]string{"ASIAFIRST", "first-secret", "first-token"}},
		{"within 5 minutes of expiry: fetched again", [3]string{"ASIASECOND", "second-secret", "second-token"}, time.Hour, [3]string{"ASIASECOND", "second-secret", "second-token"}},
		{"an hour left: kept", [3]string{"ASIATHIRD", "third-secret", "third-token"}, time.Hour, [3]string{"ASIASECOND", "second-secret", "second-token"}},
	}
	for _, st := range steps {
		give(st.give[0], st.give[1], st.give[2], st.expires)
		want = st.want
		if code, msg := send(t, s, up.URL+"/model/anthropic.claude-3-haiku-20240307-v1:0/converse", body, nil); code != 200 {
			t.Fatalf("%s: %d %s", st.name, code, msg)
		}
	}
	if out := s.Scrub("signed with second-secret and second-token"); strings.Contains(out, "second-") {
		t.Errorf("fetched secrets not scrubbed: %s", out)
	}

	// A profile the file does not have is a configuration mistake: the
	// start fails. A process that fails fails the request with a 502
	// (retryable), not the start.
	if _, err := credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4, Region: "us-east-1",
		CredentialChain: true, Profile: "missing", ConfigFile: cfgFile}, "", envOf(nil)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a profile that is not there: %v", err)
	}
	if err := os.WriteFile(cfgFile, []byte("[profile broken]\ncredential_process = /bin/false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4, Region: "us-east-1",
		CredentialChain: true, Profile: "broken", ConfigFile: cfgFile}, "", envOf(nil))
	if err != nil {
		t.Fatalf("a failing process failed the start: %v", err)
	}
	req, _ := http.NewRequest("POST", up.URL, nil)
	if err := s.Authorize(req, nil); err == nil || !strings.Contains(err.Error(), "credential chain") {
		t.Errorf("authorize with a failing process: %v", err)
	}
}

// BenchmarkSigV4Chain is BenchmarkSigV4 with the credential chain's keys
// (cached: a credential_process run once, its keys good for an hour).
func BenchmarkSigV4Chain(b *testing.B) {
	dir := b.TempDir()
	creds, script, cfgFile := filepath.Join(dir, "creds.json"), filepath.Join(dir, "creds.sh"), filepath.Join(dir, "config")
	doc := fmt.Sprintf(`{"Version":1,"AccessKeyId":"ASIABENCH","SecretAccessKey":"bench-secret","SessionToken":"bench-token","Expiration":%q}`,
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	for _, f := range []struct{ path, text string }{{creds, doc}, {script, "#!/bin/sh\ncat " + creds + "\n"}, {cfgFile, "[profile bench]\ncredential_process = " + script + "\n"}} {
		if err := os.WriteFile(f.path, []byte(f.text), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	s, err := credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4, Region: "us-east-1",
		CredentialChain: true, Profile: "bench", ConfigFile: cfgFile}, "", envOf(nil))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(strings.Repeat("x", 1024))
	req, _ := http.NewRequest("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1:0/converse", nil)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := s.Authorize(req, body); err != nil {
			b.Fatal(err)
		}
	}
}
