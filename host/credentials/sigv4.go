package credentials

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/switchyard/switchyard/host/apierr"
)

// sigV4 signs with static credentials (config or the standard AWS
// variables; a session token from the environment is used as given), or
// with those of the AWS SDK's credential chain (auth.credential_chain),
// whose temporary credentials — an instance or container role, SSO, a
// credential_process — are cached and fetched again before they expire.
type sigV4 struct {
	secrets
	creds   aws.Credentials
	chain   aws.CredentialsProvider // nil: creds
	region  string
	service string
	signer  *v4.Signer
	now     func() time.Time // a test's clock
}

func newSigV4(id, secret, session, region, service string) *sigV4 {
	s := &sigV4{
		creds:  aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: session, Source: "switchyard config"},
		region: region, service: service, signer: v4.NewSigner(), now: time.Now,
	}
	s.static = []string{secret, session}
	return s
}

// newSigV4Chain signs with the AWS SDK's default credential chain
// (config.LoadDefaultConfig), its credentials cached by aws.CredentialsCache
// and fetched again 5 minutes before they expire. Nothing is fetched here:
// an instance role's endpoint may be slow to answer at start, and a chain
// that finds nothing fails the requests (502, falling back), not the start.
func newSigV4Chain(slug string, cfg Config, region string) (*sigV4, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute }),
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.ConfigFile != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{cfg.ConfigFile}))
	}
	ac, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("config: provider %q: auth aws-sigv4 credential chain: %w", slug, err)
	}
	return &sigV4{chain: ac.Credentials, region: region, service: cmp.Or(cfg.Service, DefaultSigV4Service), signer: v4.NewSigner(), now: time.Now}, nil
}

func (s *sigV4) Name() string             { return AWSSigV4 }
func (s *sigV4) Scrub(text string) string { return s.scrub(text) }

// Authorize signs req as it will be sent: method, path, query, the
// headers the adapter and the host set, and the SHA-256 of body. Nothing
// may change the request afterwards (the transport's own Accept-Encoding
// and User-Agent are not among the signed headers).
func (s *sigV4) Authorize(req *http.Request, body []byte) error {
	sum := sha256.Sum256(body)
	// Bedrock, like most AWS services, checks the payload through the
	// signature only; S3 wants the hash as a header too, harmless here.
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	creds := s.creds
	if s.chain != nil {
		c, err := s.chain.Retrieve(req.Context())
		if err != nil {
			// Retryable: another provider of the model may answer.
			e := apierr.Wrap(http.StatusBadGateway, err, "provider credentials could not be fetched (aws-sigv4 credential chain)")
			e.Retryable = true
			return e
		}
		s.token(c.SecretAccessKey) // scrubbed from errors like the static ones
		s.token(c.SessionToken)
		creds = c
	}
	if err := s.signer.SignHTTP(context.Background(), creds, req, hash, s.service, s.region, s.now()); err != nil {
		return apierr.Wrap(http.StatusBadGateway, err, "provider request could not be signed (aws-sigv4)")
	}
	return nil
}
