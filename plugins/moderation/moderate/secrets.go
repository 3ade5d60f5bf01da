package moderate

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Secrets: credentials pasted into a prompt. Each kind has a fixed prefix
// its vendor documents, so the patterns run only on windows that start at
// one (a strings.Index scan), never on the whole text.
var secretRules = []struct {
	prefix string
	re     *regexp.Regexp // anchored at the prefix
}{
	// AWS access key ids: a four-letter kind, then 16 base32 characters.
	{"AKIA", regexp.MustCompile(`^AKIA[A-Z2-7]{16}`)},
	{"ASIA", regexp.MustCompile(`^ASIA[A-Z2-7]{16}`)},
	// GitHub's token formats (github.blog, "Behind GitHub's new
	// authentication token formats"): ghp_ and kin carry 36 characters,
	// fine-grained PATs 22 + "_" + 59.
	{"ghp_", regexp.MustCompile(`^ghp_[A-Za-z0-9]{36}`)},
	{"gho_", regexp.MustCompile(`^gho_[A-Za-z0-9]{36}`)},
	{"ghu_", regexp.MustCompile(`^ghu_[A-Za-z0-9]{36}`)},
	{"ghs_", regexp.MustCompile(`^ghs_[A-Za-z0-9]{36}`)},
	{"ghr_", regexp.MustCompile(`^ghr_[A-Za-z0-9]{36}`)},
	{"github_pat_", regexp.MustCompile(`^github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}`)},
	// Anthropic (sk-ant-api03-…), OpenAI project/service keys (sk-proj-,
	// sk-svcacct-, sk-admin-) and the older 48-character sk- keys. A
	// placeholder such as sk-your-key-here is too short and has no digits.
	{"sk-", regexp.MustCompile(`^sk-(?:ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{80,}|(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|[A-Za-z0-9]{48}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})`)},
	// Slack bot, user, app and refresh tokens: xox?- and numeric groups.
	{"xox", regexp.MustCompile(`^xox[abeprs]-\d{8,13}-[0-9A-Za-z\-]{8,}`)},
	// PEM private key blocks (RFC 7468): the whole block.
	{"-----BEGIN ", regexp.MustCompile(`^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s:,\-]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)`)},
	// JWTs (RFC 7519): three base64url parts, the first two JSON objects.
	{"eyJ", regexp.MustCompile(`^eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{16,}`)},
}

// reAWSSecret is an AWS secret access key: 40 base64 characters. Alone it
// looks like any hash, so it counts only after a word that names it.
var (
	reAWSSecret      = regexp.MustCompile(`[A-Za-z0-9/+]{40}`)
	awsSecretContext = []string{"aws_secret", "secret_access_key", "secretaccesskey", "aws secret", "secret access key", "aws_session"}
)

// secrets finds credentials; each finding's span is the whole credential.
func secrets(text string, add func(cat string, s, e int)) {
	for _, r := range secretRules {
		for i := 0; ; {
			j := strings.Index(text[i:], r.prefix)
			if j < 0 {
				break
			}
			j += i
			// a prefix glued to a word is part of that word (task-sk-…)
			if j > 0 && (isAlnum(text[j-1]) || text[j-1] == '_') && r.prefix != "-----BEGIN " {
				i = j + 1
				continue
			}
			w := text[j:min(len(text), j+16384)]
			if m := r.re.FindStringIndex(w); m != nil && (r.prefix == "-----BEGIN " || m[1] == len(w) || !isAlnum(w[m[1]])) {
				if r.prefix != "eyJ" || jwtHeader(w[:m[1]]) {
					add(CatSecret, j, j+m[1])
					i = j + m[1]
					continue
				}
			}
			i = j + 1
		}
	}
	lower := ""
	for _, w := range awsSecretContext {
		if lower == "" {
			if !containsFold(text, "secret") && !containsFold(text, "aws") {
				return
			}
			lower = strings.ToLower(text)
		}
		for i := 0; ; {
			j := strings.Index(lower[i:], w)
			if j < 0 {
				break
			}
			j += i + len(w)
			win := [2]int{j, min(len(text), j+80)}
			if m := reAWSSecret.FindStringIndex(text[win[0]:win[1]]); m != nil {
				s, e := win[0]+m[0], win[0]+m[1]
				if bounded(text, s, e) && (e >= len(text) || text[e] != '/' && text[e] != '+') && mixedClasses(text[s:e]) {
					add(CatSecret, s, e)
				}
			}
			i = j
		}
	}
}

// jwtHeader reports a JWT whose header decodes to a JSON object naming its
// algorithm or type, so a random eyJ… string is not taken for one.
func jwtHeader(tok string) bool {
	h, _, _ := strings.Cut(tok, ".")
	d, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "="))
	if err != nil {
		return false
	}
	s := string(d)
	return strings.HasPrefix(s, "{") && (strings.Contains(s, `"alg"`) || strings.Contains(s, `"typ"`))
}

// mixedClasses: upper, lower and digit all present (a key, not a word or
// a run of one letter).
func mixedClasses(s string) bool {
	var up, lo, dg bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		up = up || (c >= 'A' && c <= 'Z')
		lo = lo || (c >= 'a' && c <= 'z')
		dg = dg || isDigit(c)
	}
	return up && lo && dg
}

func isAlnum(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }

// containsFold reports whether s contains the ASCII word w (lower case) in
// any case, without allocating a lowered copy of s.
func containsFold(s, w string) bool { return indexFold(s, w, 0) >= 0 }

// indexFold is the first index at or after from of the ASCII word w (lower
// case) in s, in any case, or -1.
func indexFold(s, w string, from int) int {
	if len(w) == 0 {
		return from
	}
	c0, c1 := w[0], w[0]
	if c0 >= 'a' && c0 <= 'z' {
		c1 = c0 - 'a' + 'A'
	}
	for i := from; i+len(w) <= len(s); i++ {
		if (s[i] == c0 || s[i] == c1) && strings.EqualFold(s[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}
