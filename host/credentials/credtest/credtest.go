// Package credtest holds the fakes that check host-side provider
// credentials the way the real services do, for tests over loopback: a
// SigV4 verifier (AWS recomputes the signature from the secret it holds
// and compares) and an OAuth token endpoint that issues expiring tokens
// (Google's JWT-bearer grant, Entra ID's client-credentials grant) and
// checks the bearer tokens an upstream fake receives.
package credtest

import (
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxSkew is how far a request's X-Amz-Date may be from the verifier's
// clock: AWS rejects a signature more than 15 minutes off
// (SignatureDoesNotMatch / "Signature expired").
const MaxSkew = 15 * time.Minute

// VerifySigV4 checks r (whose body was body) as AWS does: the access key
// is known, the date is fresh, the payload hash matches the body, and the
// signature recomputed with secret over the signed headers is the one
// sent. now is the verifier's clock.
func VerifySigV4(r *http.Request, body []byte, accessKeyID, secret, sessionToken string, now time.Time) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("missing or non-SigV4 Authorization header %q", auth)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return fmt.Errorf("malformed credential scope %q", fields["Credential"])
	}
	if scope[0] != accessKeyID {
		return fmt.Errorf("unknown access key %q", scope[0])
	}
	if sessionToken != "" && r.Header.Get("X-Amz-Security-Token") != sessionToken {
		return fmt.Errorf("the security token is missing or wrong")
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("bad X-Amz-Date: %v", err)
	}
	if d := now.Sub(at); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("signature expired: X-Amz-Date %s is %s from now", at.Format(time.RFC3339), d)
	}
	if at.Format("20060102") != scope[1] {
		return fmt.Errorf("credential date %s is not the request date", scope[1])
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hash {
		return fmt.Errorf("x-amz-content-sha256 does not match the body")
	}
	// The canonical request is rebuilt from what arrived: the signed
	// headers only, the path and query as received.
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	re, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return err
	}
	re.ContentLength = int64(len(body))
	for _, name := range strings.Split(fields["SignedHeaders"], ";") {
		switch name {
		case "host", "content-length":
			continue
		}
		for _, v := range r.Header.Values(name) {
			re.Header.Add(name, v)
		}
	}
	creds := aws.Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secret, SessionToken: sessionToken}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, re, hash, scope[3], scope[2], at); err != nil {
		return err
	}
	want := re.Header.Get("Authorization")
	got := auth
	if !hmac.Equal([]byte(sigOf(want)), []byte(sigOf(got))) {
		return fmt.Errorf("the request signature we calculated does not match the signature you provided")
	}
	return nil
}

func sigOf(auth string) string {
	_, sig, _ := strings.Cut(auth, "Signature=")
	return sig
}

// TokenServer is an OAuth 2.0 token endpoint on loopback. It accepts
// Google's JWT-bearer grant (the assertion signed by the service
// account's key, PublicKey) and the client-credentials grant (ClientID,
// ClientSecret), and issues opaque tokens that live Lifetime.
type TokenServer struct {
	URL          string
	PublicKey    *rsa.PublicKey // checks JWT assertions
	Issuer       string         // the assertion's iss (the service account's email)
	ClientID     string
	ClientSecret string
	Scope        string // the scope a grant must ask for

	mu       sync.Mutex
	lifetime time.Duration
	now      func() time.Time
	issued   map[string]time.Time // token → expiry
	minted   int
	srv      *httptest.Server
}

// NewTokenServer starts a token endpoint issuing tokens that live
// lifetime by the clock now.
func NewTokenServer(lifetime time.Duration, now func() time.Time) *TokenServer {
	ts := &TokenServer{lifetime: lifetime, now: now, issued: map[string]time.Time{}}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	ts.URL = ts.srv.URL + "/token"
	return ts
}

// Close stops the endpoint.
func (ts *TokenServer) Close() { ts.srv.Close() }

// SetLifetime changes how long the next tokens live.
func (ts *TokenServer) SetLifetime(d time.Duration) {
	ts.mu.Lock()
	ts.lifetime = d
	ts.mu.Unlock()
}

// Minted is how many tokens were issued.
func (ts *TokenServer) Minted() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.minted
}

// Check says whether an Authorization header carries a token this
// endpoint issued and that has not expired, as a resource server checks.
func (ts *TokenServer) Check(header string) error {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return fmt.Errorf("no bearer token in %q", header)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	exp, ok := ts.issued[tok]
	if !ok {
		return fmt.Errorf("token not issued here")
	}
	if !ts.now().Before(exp) {
		return fmt.Errorf("token expired at %s", exp.Format(time.RFC3339))
	}
	return nil
}

func (ts *TokenServer) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		oauthError(w, "invalid_request", "POST a form")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if err := ts.checkJWT(r.PostForm.Get("assertion")); err != nil {
			oauthError(w, "invalid_grant", err.Error())
			return
		}
	case "client_credentials":
		id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		if u, p, ok := r.BasicAuth(); ok {
			id, secret = u, p
		}
		if id != ts.ClientID || !hmac.Equal([]byte(secret), []byte(ts.ClientSecret)) {
			oauthError(w, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
			return
		}
		if ts.Scope != "" && r.PostForm.Get("scope") != ts.Scope {
			oauthError(w, "invalid_scope", "scope "+r.PostForm.Get("scope"))
			return
		}
	default:
		oauthError(w, "unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	ts.mu.Lock()
	ts.minted++
	tok := fmt.Sprintf("ya29.test-token-%d-%s", ts.minted, strings.Repeat("x", 16))
	ts.issued[tok] = ts.now().Add(ts.lifetime)
	life := ts.lifetime
	ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(life / time.Second)})
}

// checkJWT verifies an RS256 assertion as Google's endpoint does: the
// signature by the account's key, iss, aud (this endpoint), scope, exp.
func (ts *TokenServer) checkJWT(assertion string) error {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return fmt.Errorf("assertion is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(ts.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("Invalid JWT Signature.")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var c struct {
		Iss, Aud, Scope string
		Exp, Iat        int64
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch {
	case c.Iss != ts.Issuer:
		return fmt.Errorf("iss %q", c.Iss)
	case c.Aud != ts.URL:
		return fmt.Errorf("aud %q is not this endpoint", c.Aud)
	case ts.Scope != "" && c.Scope != ts.Scope:
		return fmt.Errorf("scope %q", c.Scope)
	case time.Unix(c.Exp, 0).Before(time.Now()):
		return fmt.Errorf("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
	}
	return nil
}

func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
