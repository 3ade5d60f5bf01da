package credentials

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"

	"github.com/switchyard/switchyard/host/apierr"
)

// earlyRefresh is how long before its expiry a cached token is replaced.
// Google's and Entra ID's tokens live an hour; five minutes covers a
// request that takes the token just before it would expire and a clock
// a little off, and refreshes twelve times a day at most.
const earlyRefresh = 5 * time.Minute

// tokenTimeout bounds one call to a token endpoint; the request waiting
// for it fails over to another provider rather than hang.
const tokenTimeout = 30 * time.Second

const (
	cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
	azureScope    = "https://cognitiveservices.azure.com/.default"
)

// bearer sends an OAuth access token from src, a cache that mints a new
// token earlyRefresh before the current one expires (oauth2's
// ReuseTokenSource: one refresh at a time, the other requests wait for it).
type bearer struct {
	secrets
	name string
	src  oauth2.TokenSource
}

func (b *bearer) Name() string             { return b.name }
func (b *bearer) Scrub(text string) string { return b.scrub(text) }

func (b *bearer) Authorize(req *http.Request, _ []byte) error {
	tok, err := b.src.Token()
	if err != nil {
		// The token endpoint's answer is for the operator (the log has it
		// through Cause); the client learns that this provider's
		// credentials, not its own key, failed, and another provider may
		// be tried.
		return &apierr.Error{Status: http.StatusBadGateway, Retryable: true, Cause: errors.New(b.scrub(err.Error())),
			Message: fmt.Sprintf("the gateway could not get an access token for this provider (%s); the gateway's log has the token endpoint's reason", b.name)}
	}
	b.token(tok.AccessToken)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

// tokenContext carries the HTTP client the token requests use.
func tokenContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenTimeout})
}

// newGoogle reads a service-account key file, or the authorized_user file
// `gcloud auth application-default login` writes. tokenURL, when set,
// replaces the file's token endpoint.
func newGoogle(data []byte, scopes []string, tokenURL string) (*bearer, error) {
	if len(scopes) == 0 {
		scopes = []string{cloudPlatform}
	}
	var f struct {
		Type         string `json:"type"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		RefreshToken string `json:"refresh_token"`
		PrivateKey   string `json:"private_key"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a JSON credentials file: %w", err)
	}
	b := &bearer{name: GoogleServiceAccount}
	ctx := tokenContext()
	switch f.Type {
	case string(google.ServiceAccount):
		cfg, err := google.JWTConfigFromJSON(data, scopes...)
		if err != nil {
			return nil, err
		}
		if tokenURL != "" {
			cfg.TokenURL = tokenURL
		}
		b.static = []string{f.PrivateKey}
		b.src = oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx), earlyRefresh)
	case string(google.AuthorizedUser):
		if f.RefreshToken == "" {
			return nil, errors.New("authorized_user credentials without a refresh_token")
		}
		cfg := &oauth2.Config{ClientID: f.ClientID, ClientSecret: f.ClientSecret, Scopes: scopes,
			Endpoint: oauth2.Endpoint{AuthURL: google.Endpoint.AuthURL, TokenURL: cmp.Or(tokenURL, google.Endpoint.TokenURL), AuthStyle: oauth2.AuthStyleInParams}}
		b.static = []string{f.ClientSecret, f.RefreshToken}
		b.src = oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: f.RefreshToken}), earlyRefresh)
	default:
		// Other kinds (external_account, impersonation) run programs or
		// call further services; not supported rather than half-supported.
		return nil, fmt.Errorf("credentials type %q: only service_account and authorized_user files are supported", f.Type)
	}
	return b, nil
}

// newAzureAD mints Entra ID tokens with the client-credentials grant.
func newAzureAD(tenant, clientID, secret, scope, tokenURL string) *bearer {
	if tokenURL == "" {
		tokenURL = "https://login.microsoftonline.com/" + url.PathEscape(tenant) + "/oauth2/v2.0/token"
	}
	cfg := &clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: tokenURL, Scopes: []string{scope},
		AuthStyle: oauth2.AuthStyleInParams}
	b := &bearer{name: AzureAD, src: oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(tokenContext()), earlyRefresh)}
	b.static = []string{secret}
	return b
}

// azureKey sends Azure's api-key header.
type azureKey struct {
	secrets
	key string
}

func newAzureKey(key string) *azureKey {
	k := &azureKey{key: key}
	k.static = []string{key}
	return k
}

func (k *azureKey) Name() string             { return AzureAPIKey }
func (k *azureKey) Scrub(text string) string { return k.scrub(text) }

func (k *azureKey) Authorize(req *http.Request, _ []byte) error {
	req.Header.Set("Api-Key", k.key)
	return nil
}
