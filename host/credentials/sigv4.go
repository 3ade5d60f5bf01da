package credentials

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/switchyard/switchyard/host/apierr"
)

// sigV4 signs with static credentials (config or the standard AWS
// variables). Temporary credentials that expire — an instance role, SSO —
// would need a refreshing provider; a session token from the environment
// is used as given.
type sigV4 struct {
	secrets
	creds   aws.Credentials
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
	if err := s.signer.SignHTTP(context.Background(), s.creds, req, hash, s.service, s.region, s.now()); err != nil {
		return apierr.Wrap(http.StatusBadGateway, err, "provider request could not be signed (aws-sigv4)")
	}
	return nil
}
