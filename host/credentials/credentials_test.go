package credentials_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/credentials"
	"github.com/switchyard/switchyard/host/credentials/credtest"
)

const (
	// The example credentials of the AWS documentation
	// (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
	akid   = "AKIAIOSFODNN7EXAMPLE"
	secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// send authorizes a request to url with body and sends it; the server
// answers 200 or 403 with its reason.
func send(t *testing.T, s credentials.Scheme, url string, body []byte, tamper func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := s.Authorize(req, body); err != nil {
		t.Fatalf("authorize: %v", err)
	}
	if tamper != nil {
		tamper(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSigV4: a request signed by the host passes a verifier that
// recomputes the signature from the secret as AWS does, over loopback;
// a tampered body or header, a stale date, a wrong secret do not.
func TestSigV4(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"Hello"}]}]}`)
	cases := []struct {
		name    string
		session string
		tamper  func(*http.Request)
		skew    time.Duration // verifier's clock ahead of the signer's
		secret  string        // the verifier's; default secret
		want    string        // "" accepted, else part of the refusal
	}{
		{name: "signed request", want: ""},
		{name: "with a session token", session: "FwoGZXIvYXdzEXAMPLEsessiontoken0123456789", want: ""},
		{name: "body changed after signing", tamper: func(r *http.Request) {
			b := []byte(`{"messages":[{"role":"user","content":[{"text":"Hellp"}]}]}`)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}, want: "does not match"},
		{name: "signed header changed", tamper: func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, want: "does not match"},
		{name: "stale date", skew: 20 * time.Minute, want: "expired"},
		{name: "wrong secret", secret: "not-the-secret-key-000000000000000000000", want: "does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": c.session, "AWS_REGION": "us-east-1"}
			s, err := credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4}, "", envOf(env))
			if err != nil || s == nil {
				t.Fatalf("new: %v %v", s, err)
			}
			verifySecret := secret
			if c.secret != "" {
				verifySecret = c.secret
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if err := credtest.VerifySigV4(r, b, akid, verifySecret, c.session, time.Now().Add(c.skew)); err != nil {
					http.Error(w, err.Error(), http.StatusForbidden)
					return
				}
				w.WriteHeader(200)
			}))
			defer srv.Close()
			// A Bedrock path: the model id has a colon, which SigV4
			// escapes in the canonical URI.
			status, msg := send(t, s, srv.URL+"/model/anthropic.claude-3-haiku-20240307-v1:0/converse", body, c.tamper)
			if c.want == "" && status != 200 {
				t.Fatalf("refused: %d %s", status, msg)
			}
			if c.want != "" && (status != 403 || !strings.Contains(msg, c.want)) {
				t.Fatalf("want a refusal with %q, got %d %s", c.want, status, msg)
			}
		})
	}
}

// serviceAccount writes a service-account key file for key, as the
// Google Cloud console downloads it.
func serviceAccount(t *testing.T, key *rsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := map[string]string{
		"type": "service_account", "project_id": "switchyard-test", "private_key_id": "0123456789abcdef",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "gateway@switchyard-test.iam.gserviceaccount.com", "client_id": "1234567890",
		"token_uri": "https://oauth2.googleapis.com/token",
	}
	b, _ := json.Marshal(f)
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokenSchemes: google-service-account and azure-ad get tokens from a
// token endpoint that checks the grant (the JWT's signature, the client
// secret), reuse a token while it has more than the refresh margin to
// live, mint a new one when it has less, and every token the upstream
// sees is one the endpoint issued and that has not expired.
func TestTokenSchemes(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 1024) // small: a test key, generated fast
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	cases := []struct {
		name      string
		scheme    string
		lifetime  time.Duration
		badSecret bool // the endpoint knows another key or secret
		wantMints int  // after three requests
	}{
		{name: "google, an hour-long token is reused", scheme: credentials.GoogleServiceAccount, lifetime: time.Hour, wantMints: 1},
		{name: "google, a token about to expire is replaced", scheme: credentials.GoogleServiceAccount, lifetime: 2 * time.Minute, wantMints: 3},
		{name: "google, key refused", scheme: credentials.GoogleServiceAccount, lifetime: time.Hour, badSecret: true},
		{name: "azure-ad, an hour-long token is reused", scheme: credentials.AzureAD, lifetime: time.Hour, wantMints: 1},
		{name: "azure-ad, a token about to expire is replaced", scheme: credentials.AzureAD, lifetime: time.Minute, wantMints: 3},
		{name: "azure-ad, secret refused", scheme: credentials.AzureAD, lifetime: time.Hour, badSecret: true},
	}
	const clientSecret = "azure-client-secret-Q~0123456789abcdefghij"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := credtest.NewTokenServer(c.lifetime, time.Now)
			defer ts.Close()
			ts.Issuer, ts.PublicKey = "gateway@switchyard-test.iam.gserviceaccount.com", &key.PublicKey
			ts.ClientID, ts.ClientSecret = "client-1", clientSecret
			if c.badSecret {
				ts.PublicKey, ts.ClientSecret = &other.PublicKey, "another-secret"
			}
			cfg := credentials.Config{Scheme: c.scheme, TokenURL: ts.URL}
			env := map[string]string{}
			if c.scheme == credentials.GoogleServiceAccount {
				cfg.CredentialsFile = serviceAccount(t, key)
				ts.Scope = "https://www.googleapis.com/auth/cloud-platform"
			} else {
				cfg.TenantID, cfg.ClientID = "tenant-1", "client-1"
				env["AZURE_CLIENT_SECRET"] = clientSecret
				ts.Scope = "https://cognitiveservices.azure.com/.default"
			}
			s, err := credentials.New("p", cfg, "", envOf(env))
			if err != nil || s == nil {
				t.Fatalf("new: %v %v", s, err)
			}
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := ts.Check(r.Header.Get("Authorization")); err != nil {
					http.Error(w, err.Error(), http.StatusUnauthorized)
				}
			}))
			defer up.Close()
			if c.badSecret {
				req, _ := http.NewRequest("POST", up.URL, nil)
				err := s.Authorize(req, nil)
				var e *apierr.Error
				if !errors.As(err, &e) || e.Status != http.StatusBadGateway || !e.Retryable {
					t.Fatalf("want a retryable 502, got %v", err)
				}
				if strings.Contains(e.Message, clientSecret) || strings.Contains(s.Scrub(e.Error()), clientSecret) {
					t.Fatalf("the secret is in the error: %v", e)
				}
				return
			}
			for i := range 3 {
				if status, msg := send(t, s, up.URL, []byte(`{}`), nil); status != 200 {
					t.Fatalf("request %d: upstream refused the token: %d %s", i, status, msg)
				}
			}
			if got := ts.Minted(); got != c.wantMints {
				t.Fatalf("minted %d tokens for three requests, want %d", got, c.wantMints)
			}
			// A provider echoing the token or the secret back.
			req, _ := http.NewRequest("POST", up.URL, nil)
			_ = s.Authorize(req, nil)
			tok := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
			static := clientSecret
			if c.scheme == credentials.GoogleServiceAccount {
				static = key.N.String() // not a secret of the scheme: must stay
			}
			echo := "invalid token " + tok + " for client secret " + static
			got := s.Scrub(echo)
			if strings.Contains(got, tok) || (c.scheme == credentials.AzureAD) == strings.Contains(got, static) {
				t.Fatalf("scrub left a secret: %s", got)
			}
		})
	}
}

// TestAzureAPIKey: the key goes in api-key, and is scrubbed.
func TestAzureAPIKey(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	s, err := credentials.New("azure", credentials.Config{Scheme: credentials.AzureAPIKey}, key, envOf(nil))
	if err != nil || s == nil {
		t.Fatal(s, err)
	}
	req, _ := http.NewRequest("POST", "http://127.0.0.1/", nil)
	if err := s.Authorize(req, nil); err != nil || req.Header.Get("api-key") != key || req.Header.Get("Authorization") != "" {
		t.Fatalf("%v %v", err, req.Header)
	}
	if got := s.Scrub("Access denied due to invalid subscription key " + key); strings.Contains(got, key) {
		t.Fatal(got)
	}
}

// TestNewConfig: a scheme whose credentials are not set switches its
// provider off (nil, no error); a wrong block is an error naming it.
func TestNewConfig(t *testing.T) {
	aws := map[string]string{"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret}
	cases := []struct {
		name    string
		cfg     credentials.Config
		env     map[string]string
		wantOn  bool
		wantErr string
	}{
		{name: "aws from the standard variables", cfg: credentials.Config{Scheme: "aws-sigv4", Region: "eu-west-1"}, env: aws, wantOn: true},
		{name: "aws from named variables", cfg: credentials.Config{Scheme: "aws-sigv4", AccessKeyIDEnv: "BR_ID", SecretAccessKeyEnv: "BR_SECRET"},
			env: map[string]string{"BR_ID": akid, "BR_SECRET": secret, "AWS_DEFAULT_REGION": "us-west-2"}, wantOn: true},
		{name: "aws without keys is off", cfg: credentials.Config{Scheme: "aws-sigv4", Region: "us-east-1"}},
		{name: "aws without a region", cfg: credentials.Config{Scheme: "aws-sigv4"}, env: aws, wantErr: "needs a region"},
		{name: "google without a file is off", cfg: credentials.Config{Scheme: "google-service-account"}},
		{name: "google with a missing file", cfg: credentials.Config{Scheme: "google-service-account", CredentialsFile: "/nonexistent/sa.json"}, wantErr: "no such file"},
		{name: "azure-ad without a secret is off", cfg: credentials.Config{Scheme: "azure-ad", TenantID: "t", ClientID: "c"}},
		{name: "azure-ad without a client id", cfg: credentials.Config{Scheme: "azure-ad", TenantID: "t"}, env: map[string]string{"AZURE_CLIENT_SECRET": "s"}, wantErr: "client_id"},
		{name: "unknown scheme", cfg: credentials.Config{Scheme: "kerberos"}, wantErr: `"kerberos" is not one of aws-sigv4`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := credentials.New("p", c.cfg, "", envOf(c.env))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want an error with %q, got %v", c.wantErr, err)
				}
				return
			}
			if err != nil || (s != nil) != c.wantOn {
				t.Fatalf("on=%v err=%v, want on=%v", s != nil, err, c.wantOn)
			}
		})
	}
}

// BenchmarkSigV4 is what signing adds to one request with a 1 KB body
// (the target: under 20 µs).
func BenchmarkSigV4(b *testing.B) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1"}
	s, _ := credentials.New("bedrock", credentials.Config{Scheme: credentials.AWSSigV4}, "", envOf(env))
	body := bytes.Repeat([]byte("x"), 1024)
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

// TestReuse: a scheme built again from the same configuration, variables
// and files is the running one (a reload keeps its tokens); a changed
// secret, variable name or file content builds a new one.
func TestReuse(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	sa := serviceAccount(t, key)
	env := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-1"}
	build := func(cfg credentials.Config) credentials.Scheme {
		t.Helper()
		s, err := credentials.New("p", cfg, "", envOf(env))
		if err != nil || s == nil {
			t.Fatalf("%v %v", s, err)
		}
		return s
	}
	aws := credentials.Config{Scheme: credentials.AWSSigV4, Region: "us-east-1"}
	google := credentials.Config{Scheme: credentials.GoogleServiceAccount, CredentialsFile: sa, TokenURL: "http://127.0.0.1:1/token"}
	old := build(aws)
	if got := credentials.Reuse(old, build(aws)); got != old {
		t.Error("the same SigV4 credentials were not reused")
	}
	env["AWS_SECRET_ACCESS_KEY"] = "secret-2"
	if next := build(aws); credentials.Reuse(old, next) != next {
		t.Error("a changed secret kept the old scheme")
	}
	oldG := build(google)
	if got := credentials.Reuse(oldG, build(google)); got != oldG {
		t.Error("the same service account file was not reused")
	}
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	if err := os.Rename(serviceAccount(t, other), sa); err != nil {
		t.Fatal(err)
	}
	if next := build(google); credentials.Reuse(oldG, next) != next {
		t.Error("a rewritten service account file kept the old scheme")
	}
	if next := build(google); credentials.Reuse(old, next) != next {
		t.Error("a scheme of another kind was reused")
	}
}
