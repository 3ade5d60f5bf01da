package credentials

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Config is a provider's auth block. Secrets are never written in the
// file: each is read from an environment variable the block names (or the
// variable the cloud's own tools read, by default) or, for Google, from a
// credentials file.
// DefaultSigV4Service is the AWS signing name aws-sigv4 signs for unless
// auth.service says otherwise: AWS's name of the Bedrock Runtime service
// (what its endpoints' credential scope says), not a module's id.
const DefaultSigV4Service = "bedrock"

type Config struct {
	Scheme string `yaml:"scheme"`

	// aws-sigv4
	Region             string `yaml:"region"`                // default $AWS_REGION, then $AWS_DEFAULT_REGION
	Service            string `yaml:"service"`               // signing name; default DefaultSigV4Service
	AccessKeyIDEnv     string `yaml:"access_key_id_env"`     // default AWS_ACCESS_KEY_ID
	SecretAccessKeyEnv string `yaml:"secret_access_key_env"` // default AWS_SECRET_ACCESS_KEY
	SessionTokenEnv    string `yaml:"session_token_env"`     // default AWS_SESSION_TOKEN
	// CredentialChain takes the credentials from the AWS SDK's default
	// chain instead of key variables: a shared-config profile (static
	// keys, credential_process, SSO, an assumed role), web identity (EKS),
	// container credentials (ECS, EKS Pod Identity) or the instance role.
	// Temporary credentials are cached and fetched again 5 minutes before
	// they expire.
	CredentialChain bool   `yaml:"credential_chain"`
	Profile         string `yaml:"profile"`     // the chain's profile; default $AWS_PROFILE, then default
	ConfigFile      string `yaml:"config_file"` // the shared config file; default $AWS_CONFIG_FILE, then ~/.aws/config

	// google-service-account
	CredentialsFile string   `yaml:"credentials_file"` // default $GOOGLE_APPLICATION_CREDENTIALS, then gcloud's application default credentials
	Scopes          []string `yaml:"scopes"`           // default cloud-platform

	// azure-ad
	TenantID        string `yaml:"tenant_id"`         // default $AZURE_TENANT_ID
	ClientID        string `yaml:"client_id"`         // default $AZURE_CLIENT_ID
	ClientSecretEnv string `yaml:"client_secret_env"` // default AZURE_CLIENT_SECRET
	Scope           string `yaml:"scope"`             // default https://cognitiveservices.azure.com/.default

	// TokenURL overrides the token endpoint of google-service-account and
	// azure-ad (a private endpoint, or a test's fake).
	TokenURL string `yaml:"token_url"`
}

// New builds the scheme of cfg for provider slug. apiKey is the value of
// the provider's api_key_env (azure-api-key's key). It returns nil and no
// error when the credentials are simply not there — the provider is then
// switched off, as one whose api_key_env is unset — and an error when the
// block is wrong or names a file that cannot be used.
//
// The scheme carries a fingerprint of everything that built it (Reuse).
func New(slug string, cfg Config, apiKey string, getenv func(string) string) (Scheme, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%#v\x00%s\x00", slug, cfg, apiKey)
	read := func(name string) string {
		v := getenv(name)
		fmt.Fprintf(h, "%s=%s\x00", name, v)
		return v
	}
	s, err := build(slug, cfg, apiKey, read, h)
	if s == nil || err != nil {
		return s, err
	}
	return &fingerprinted{Scheme: s, print: [sha256.Size]byte(h.Sum(nil))}, nil
}

// fingerprinted is a scheme with the hash of its configuration and of every
// variable and file it read.
type fingerprinted struct {
	Scheme
	print [sha256.Size]byte
}

// Reuse returns old when it was built from exactly what built next — the
// same configuration, variables and files — and next otherwise. A
// configuration reload builds every provider's scheme again; keeping the
// running one keeps the OAuth tokens it holds (and their refresh), instead
// of minting new ones for every provider on every reload.
func Reuse(old, next Scheme) Scheme {
	o, ok1 := old.(*fingerprinted)
	n, ok2 := next.(*fingerprinted)
	if ok1 && ok2 && o.print == n.print {
		return old
	}
	return next
}

func build(slug string, cfg Config, apiKey string, getenv func(string) string, h io.Writer) (Scheme, error) {
	env := func(name, def string) string {
		if name == "" {
			name = def
		}
		return getenv(name)
	}
	switch cfg.Scheme {
	case AWSSigV4:
		region := cmp.Or(cfg.Region, getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
		if cfg.CredentialChain {
			if region == "" {
				return nil, fmt.Errorf("config: provider %q: auth aws-sigv4 needs a region (auth.region, or AWS_REGION)", slug)
			}
			return newSigV4Chain(slug, cfg, region)
		}
		id, secret := env(cfg.AccessKeyIDEnv, "AWS_ACCESS_KEY_ID"), env(cfg.SecretAccessKeyEnv, "AWS_SECRET_ACCESS_KEY")
		if id == "" || secret == "" {
			return nil, nil
		}
		if region == "" {
			return nil, fmt.Errorf("config: provider %q: auth aws-sigv4 needs a region (auth.region, or AWS_REGION)", slug)
		}
		return newSigV4(id, secret, env(cfg.SessionTokenEnv, "AWS_SESSION_TOKEN"), region, cmp.Or(cfg.Service, DefaultSigV4Service)), nil
	case GoogleServiceAccount:
		path := cmp.Or(cfg.CredentialsFile, getenv("GOOGLE_APPLICATION_CREDENTIALS"))
		if path == "" {
			// gcloud auth application-default login writes here.
			if home := getenv("HOME"); home != "" {
				p := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
				if _, err := os.Stat(p); err == nil {
					path = p
				}
			}
		}
		if path == "" {
			return nil, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: provider %q: auth google-service-account: %w", slug, err)
		}
		fmt.Fprintf(h, "%s\x00%x\x00", path, sha256.Sum256(data))
		s, err := newGoogle(data, cfg.Scopes, cfg.TokenURL)
		if err != nil {
			return nil, fmt.Errorf("config: provider %q: auth google-service-account: %s: %w", slug, path, err)
		}
		return s, nil
	case AzureAPIKey:
		if apiKey == "" {
			return nil, nil
		}
		return newAzureKey(apiKey), nil
	case AzureAD:
		secret := env(cfg.ClientSecretEnv, "AZURE_CLIENT_SECRET")
		if secret == "" {
			return nil, nil
		}
		tenant, client := cmp.Or(cfg.TenantID, getenv("AZURE_TENANT_ID")), cmp.Or(cfg.ClientID, getenv("AZURE_CLIENT_ID"))
		if client == "" || (tenant == "" && cfg.TokenURL == "") {
			return nil, fmt.Errorf("config: provider %q: auth azure-ad needs tenant_id and client_id (or AZURE_TENANT_ID and AZURE_CLIENT_ID)", slug)
		}
		return newAzureAD(tenant, client, secret, cmp.Or(cfg.Scope, azureScope), cfg.TokenURL), nil
	}
	return nil, fmt.Errorf("config: provider %q: auth.scheme %q is not one of %s", slug, cfg.Scheme, strings.Join(Schemes, ", "))
}

// UsesAPIKey says whether the scheme takes the provider's api_key_env.
func UsesAPIKey(scheme string) bool { return scheme == "" || scheme == AzureAPIKey }
