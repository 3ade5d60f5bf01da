package wasm

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Operator secrets in modules' outbound calls. A module that needs, say, a
// search engine's API key writes ${secret:NAME} in a header value or the
// URL's query; the host puts the operator's value there after the module has
// handed the request over, so the key never enters module memory. The
// substitution happens only when the manifest lists NAME in grants.secrets,
// only for a destination in grants.http_domains (checked before), only for
// modules published by the operator unless NAME is in Config.TenantSecrets,
// and the value is scrubbed from whatever comes back (an echoing server
// would otherwise hand it to the module) and from error messages.

const (
	secretOpen  = "${secret:"
	secretClose = "}"
)

// usedSecret is a substituted secret: its placeholder and its value as it
// went out (and, for the query, escaped).
type usedSecret struct {
	placeholder string
	values      []string
}

// substituteSecrets replaces every ${secret:NAME} in s with its value
// (query-escaped when query), appending what it used to used. A
// placeholder the module may not use, or whose secret the operator has not
// set, is an error naming it (never its value).
func (e *Engine) substituteSecrets(mod *Module, s string, query bool, used []usedSecret) (string, []usedSecret, error) {
	if !strings.Contains(s, secretOpen) {
		return s, used, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, secretOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String(), used, nil
		}
		j := strings.Index(s[i:], secretClose)
		if j < 0 {
			b.WriteString(s)
			return b.String(), used, nil
		}
		name := s[i+len(secretOpen) : i+j]
		v, err := e.secret(mod, name)
		if err != nil {
			return "", used, err
		}
		u := usedSecret{placeholder: secretOpen + name + secretClose, values: []string{v}}
		if query {
			v = url.QueryEscape(v)
			if v != u.values[0] {
				u.values = append(u.values, v)
			}
		}
		used = append(used, u)
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+len(secretClose):]
	}
}

// secret is the value of secret name for mod, if mod may use it.
func (e *Engine) secret(mod *Module, name string) (string, error) {
	if !mod.Manifest.GrantsSecret(name) {
		return "", fmt.Errorf("secret %s is not granted to this module (grants.secrets)", name)
	}
	if mod.account != "" && !slices.Contains(e.cfg.TenantSecrets, name) {
		return "", fmt.Errorf("secret %s is not available to modules published by accounts (the operator's tenant_secrets)", name)
	}
	v := e.cfg.Secrets[name]
	if v == "" {
		return "", fmt.Errorf("secret %s is not set by the operator", name)
	}
	return v, nil
}

// scrub puts the placeholders back where a secret's value appears in s.
func scrub(s string, used []usedSecret) string {
	for _, u := range used {
		for _, v := range u.values {
			s = strings.ReplaceAll(s, v, u.placeholder)
		}
	}
	return s
}

func scrubBytes(b []byte, used []usedSecret) []byte {
	for _, u := range used {
		for _, v := range u.values {
			if bytes.Contains(b, []byte(v)) {
				b = bytes.ReplaceAll(b, []byte(v), []byte(u.placeholder))
			}
		}
	}
	return b
}
