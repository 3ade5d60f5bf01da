// Package credentials adds a provider's credentials to an upstream request
// in the host, for the providers a plain API key cannot reach: AWS
// (SigV4-signed requests), Google Cloud (OAuth access tokens minted from a
// service account) and Azure (an api-key header, or Entra ID tokens).
//
// An adapter module never sees any of it. It builds the request as for a
// key-based provider — the ${API_KEY} placeholder where its own key header
// goes — and the dispatcher, finding a scheme on the provider, drops the
// placeholder headers and hands the finished request to Authorize: a
// signature has to cover the final URL, headers and body, so it can only
// be computed after the adapter and the host's substitutions are done.
package credentials

import (
	"net/http"
	"sync"

	"github.com/switchyard/switchyard/host/redact"
)

// Scheme names, as written in a provider's auth.scheme.
const (
	AWSSigV4             = "aws-sigv4"
	GoogleServiceAccount = "google-service-account"
	AzureAPIKey          = "azure-api-key"
	AzureAD              = "azure-ad"
)

// Schemes lists the names a configuration may use, for its error message.
var Schemes = []string{AWSSigV4, GoogleServiceAccount, AzureAPIKey, AzureAD}

// Scheme authorizes the final upstream request of one provider. It is
// safe for concurrent use; one value serves every request to its provider
// until the configuration is reloaded.
type Scheme interface {
	// Authorize adds the credential to req, whose body is body (already
	// set on req; passed so a signer need not read it back). An error is
	// an *apierr.Error with its status.
	Authorize(req *http.Request, body []byte) error
	// Scrub removes every secret of the scheme — static ones and the
	// tokens it has issued — from text bound for a client or a log.
	Scrub(text string) string
	// Name is the scheme's name, for logs and errors.
	Name() string
}

// secrets is what a scheme redacts: its static secrets and the
// short-lived tokens it minted (a provider may echo a rejected token).
// Tokens are few — one live at a time, the previous one until every
// request that carried it is done — so a small ring of the latest is kept
// rather than aging them.
type secrets struct {
	static []string // set before the scheme is shared, read-only after
	mu     sync.RWMutex
	tokens [maxTokens]string
	next   int
}

// maxTokens is how many minted tokens are remembered for redaction.
const maxTokens = 4

// token remembers a minted token; cheap when it is the latest already,
// which is every request but the one after a refresh.
func (s *secrets) token(v string) {
	s.mu.RLock()
	latest := s.tokens[(s.next+maxTokens-1)%maxTokens]
	s.mu.RUnlock()
	if v == latest || v == "" {
		return
	}
	s.mu.Lock()
	s.tokens[s.next] = v
	s.next = (s.next + 1) % maxTokens
	s.mu.Unlock()
}

func (s *secrets) scrub(text string) string {
	for _, v := range s.static {
		text = redact.Secret(text, v)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.tokens {
		text = redact.Secret(text, v)
	}
	return text
}
