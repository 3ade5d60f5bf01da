package moderate

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"
)

// An injection rule: a name reported in patterns, and an RE2 pattern
// matched on normalised text (lower case, Latin letters for look-alikes,
// no zero-width characters, single spaces).
type rule struct {
	name string
	re   *regexp.Regexp
}

const (
	gap   = `[^.!?\n]{0,40}?` // a few words within one sentence
	rules = `(?:instructions?|rules|directions|directives|guidelines|guardrails|prompts?|constraints|programming|polic(?:y|ies)|restrictions|filters|limitations|system (?:message|prompt))`
)

var injectionRules = []rule{
	{"ignore-instructions", regexp.MustCompile(`\b(?:ignore|disregard|forget|override|bypass|neglect|skip|discard)\b` + gap + `\b` + rules + `\b`)},
	{"instructions-void", regexp.MustCompile(`\b(?:previous|prior|above|earlier|preceding|original|all|old)\s+(?:instructions?|directions|rules|directives|prompts?)\b[^.!?\n]{0,20}?\b(?:no longer appl(?:y|ies)|(?:are|is) (?:now )?(?:void|null|revoked|cancel+ed|obsolete|invalid|overridden)|revoked)`)},
	{"stop-following", regexp.MustCompile(`\b(?:stop|do not|don't|never) (?:follow|obey)(?:ing)?\b` + gap + `\b(?:instructions?|rules|system prompt|guidelines|above)\b`)},
	{"reveal-prompt", regexp.MustCompile(`\b(?:reveal|print|show|leak|dump|output|repeat|display|disclose|tell me|give me|write out|spell out)\b` + gap + `\b(?:system (?:prompt|message)|(?:initial|original|hidden|secret|first) (?:prompt|instructions|rules|configuration|message)|(?:your|the) (?:instructions|prompt|rules)|(?:prompt|text|instructions) above|context window)\b`)},
	{"prompt-you-were-given", regexp.MustCompile(`\b(?:instructions|prompt|rules) you (?:were|have been) given\b`)},
	{"repeat-above", regexp.MustCompile(`\brepeat (?:the|all|everything|every)\b[^.!?\n]{0,20}?\b(?:above|before|preceding)\b`)},
	{"dump-context", regexp.MustCompile(`\b(?:dump|print|output)\b[^.!?\n]{0,20}?\b(?:context|memory)\b|\b(?:context|memory)\b[^.!?\n]{0,40}?\bdump\b`)},
	{"reveal-secret", regexp.MustCompile(`\b(?:reveal|output|print|leak|tell me|give me|show me)\b` + gap + `\b(?:password|secrets?|confidential|api keys?|credentials)\b`)},
	{"role-override", regexp.MustCompile(`\byou are (?:now|no longer)\b` + gap + `\b(?:dan|jailbr\w*|unfiltered|unrestricted|uncensored|evil|free|bound|restricted|limited|developer mode|an? (?:ai|assistant|model) (?:with(?:out)?|that has no))\b`)},
	{"dan", regexp.MustCompile(`\bdo anything now\b|\b(?:act|acting|play|become) (?:as )?dan\b|\bdan (?:mode|has no)\b`)},
	{"jailbreak", regexp.MustCompile(`\bjailbr(?:eak|oken)(?:ed)? (?:mode|model|ai|assistant|version)\b|\b(?:you are|now|been) jailbr(?:eak|oken)\w*|\bjailbreak (?:enabled|activated|on)\b`)},
	{"developer-mode", regexp.MustCompile(`\b(?:enter|enable|activate|switch to|turn on)\b[^.!?\n]{0,20}?\b(?:developer|dev|god|admin|debug) mode\b|\bdeveloper override\b|\b(?:safety|filter(?:s|ing)?|moderation|guardrails?)\s*[=:]\s*(?:off|false|0|disabled)\b`)},
	{"no-restrictions", regexp.MustCompile(`\b(?:no|without(?: any)?|free from|freed from(?: your| all| the)?)\s+(?:rules|restrictions|limitations|limits|content polic(?:y|ies)|filters?|filtering|guidelines|constraints|censorship|guardrails|ethical guidelines)\b`)},
	{"disable-safety", regexp.MustCompile(`\b(?:disable|turn off|bypass|remove|deactivate|switch off|circumvent|ignore)\b[^.!?\n]{0,20}?\b(?:safety|content|moderation)\s*(?:filters?|restrictions|guidelines|measures|policy|policies|checks)?\b`)},
	{"persona-override", regexp.MustCompile(`\b(?:act|behave|respond|answer|pretend|roleplay)\b[^.!?\n]{0,30}?\b(?:unfiltered|unrestricted|uncensored|evil|jailbroken|amoral)\b|\b(?:unfiltered|uncensored|unrestricted|evil|amoral) (?:ai|assistant|model|persona|mode|chatbot)\b|\bpretend (?:that )?there are no rules\b`)},
	{"new-task", regexp.MustCompile(`\byour (?:new|real|actual|only) (?:task|role|job|instructions?|purpose|goal) (?:is|are|will be)\b|\bfollow (?:these|my) (?:new )?(?:instructions|commands|orders) (?:instead|only)\b|\bobey only\b|\bfollow my commands only\b`)},
	{"fake-system-turn", regexp.MustCompile(`</?\s*(?:system|assistant|im_start|im_end|sys)\s*>|\[/?(?:inst|sys)\]|^\s*(?:system|###\s*(?:system|instruction))\s*:`)},
	{"pwned", regexp.MustCompile(`\bi have been pwned\b`)},
}

// injectionAny is every rule in one pattern: RE2 runs the alternation in
// one pass, so clean text (the common case) costs one scan per variant;
// the rules are run one by one only to name what matched.
var injectionAny = func() *regexp.Regexp {
	parts := make([]string, len(injectionRules))
	for i, r := range injectionRules {
		parts[i] = "(?:" + r.re.String() + ")"
	}
	return regexp.MustCompile("(?m)" + strings.Join(parts, "|"))
}()

// Injection finds prompt-injection patterns in text: as written, and after
// undoing the usual obfuscations (homoglyphs and zero-width characters,
// spaced or punctuated letters, l33t, base64 and hex). A match in the text
// as written has its span; one found only after decoding covers the whole
// text.
func Injection(text string) []Finding {
	folded, plain := fold(text)
	norm := collapse(folded)
	if fs := matchRules(norm, ""); fs != nil {
		if !plain {
			// spans in the collapsed text are not spans in the original
			for i := range fs {
				fs[i].Start, fs[i].End = 0, 0
			}
		}
		return fs
	}
	type variant struct{ prefix, text string }
	var vs []variant
	if d := despace(folded); d != norm {
		vs = append(vs, variant{"spaced:", d})
	}
	if d := unleet(norm); d != norm {
		vs = append(vs, variant{"leet:", d})
		if dd := despace(unleet(folded)); dd != d {
			vs = append(vs, variant{"leet:", dd})
		}
	}
	for _, d := range decodeBase64(text) {
		f, _ := fold(d)
		vs = append(vs, variant{"base64:", collapse(f)})
	}
	for _, d := range decodeHex(text) {
		f, _ := fold(d)
		vs = append(vs, variant{"hex:", collapse(f)})
	}
	for _, v := range vs {
		if fs := matchRules(v.text, v.prefix); fs != nil {
			for i := range fs {
				fs[i].Start, fs[i].End = 0, 0
			}
			return fs
		}
	}
	return nil
}

func matchRules(s, prefix string) []Finding {
	if !injectionAny.MatchString(s) {
		return nil
	}
	var fs []Finding
	for _, r := range injectionRules {
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			fs = append(fs, Finding{Category: CatInjection, Start: m[0], End: m[1], Pattern: prefix + r.name})
		}
	}
	if fs == nil { // (?m) in the union only: a multi-line fake turn
		fs = append(fs, Finding{Category: CatInjection, Pattern: prefix + "fake-system-turn"})
	}
	return fs
}

// homoglyphs maps Cyrillic and Greek letters that look like Latin ones.
var homoglyphs = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's',
	'ԁ': 'd', 'ɡ': 'g', 'һ': 'h', 'ո': 'n', 'ν': 'v', 'ο': 'o', 'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k',
	'τ': 't', 'А': 'a', 'В': 'b', 'Е': 'e', 'К': 'k', 'М': 'm', 'Н': 'h', 'О': 'o', 'Р': 'p', 'С': 'c',
	'Т': 't', 'Х': 'x', 'І': 'i', 'Ѕ': 's', 'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ι': 'i', 'Κ': 'k', 'Μ': 'm',
	'Ν': 'n', 'Ο': 'o', 'Ρ': 'p', 'Τ': 't', 'Χ': 'x', 'Υ': 'y', 'Ζ': 'z',
}

// fold lower-cases s, folds homoglyphs and fullwidth letters to ASCII,
// drops zero-width and other format characters and turns every whitespace
// character into a space (runs are kept: despace reads a double space as a
// word break). plain reports that only ASCII case changed and spaces come
// one at a time, so the text needs no collapsing and spans in it are spans
// in s.
func fold(s string) (string, bool) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '\t' || c == '\r' || (c == ' ' && i+1 < len(s) && s[i+1] == ' ') {
			plain = false
			break
		}
	}
	if plain {
		return strings.ToLower(s), true
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff' || r == '\u00ad' || r == '\u180e':
			continue
		case r == '\t' || r == '\r' || r == '\u00a0' || r == '\u3000':
			r = ' '
		case r >= 'Ａ' && r <= 'Ｚ':
			r = r - 'Ａ' + 'a'
		case r >= 'ａ' && r <= 'ｚ':
			r = r - 'ａ' + 'a'
		default:
			if l, ok := homoglyphs[r]; ok {
				r = l
			}
		}
		if r < utf8.RuneSelf {
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String(), false
}

// collapse turns runs of spaces into one.
func collapse(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// despace joins letters written one at a time ("i g n o r e", "i.g.n.o.r.e",
// "i-g-n-o-r-e"), with a double space as the break between words, and
// splits words joined with dots, hyphens or underscores
// ("ignore.all.previous").
func despace(s string) string {
	var out []string
	for _, chunk := range strings.Split(s, "  ") {
		toks := strings.FieldsFunc(chunk, func(r rune) bool { return isSep(r) })
		var singles []string
		flush := func() {
			if len(singles) >= 3 {
				out = append(out, strings.Join(singles, ""))
			} else {
				out = append(out, singles...)
			}
			singles = singles[:0]
		}
		for _, t := range toks {
			if len(t) == 1 && isLetter(t[0]) {
				singles = append(singles, t)
				continue
			}
			flush()
			out = append(out, t)
		}
		flush()
	}
	return strings.Join(out, " ")
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }
func isSep(r rune) bool    { return r == ' ' || r == '.' || r == '-' || r == '_' || r == '*' || r == '\n' }

// unleet reads digits and symbols inside words as the letters they stand
// for (1gn0r3 → ignore). Tokens of digits only are numbers and stay.
func unleet(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, tok := range strings.SplitAfter(s, " ") {
		letters := false
		for i := 0; i < len(tok); i++ {
			if isLetter(tok[i]) {
				letters = true
				break
			}
		}
		if !letters {
			b.WriteString(tok)
			continue
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			switch c {
			case '0':
				c = 'o'
			case '1', '!', '|':
				c = 'i'
			case '3':
				c = 'e'
			case '4', '@':
				c = 'a'
			case '5', '$':
				c = 's'
			case '7', '+':
				c = 't'
			case '8':
				c = 'b'
			case '9':
				c = 'g'
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

var (
	reBase64 = regexp.MustCompile(`[A-Za-z0-9+/_\-]{16,}={0,2}`)
	reHex    = regexp.MustCompile(`\b(?:0x)?((?:[0-9a-fA-F]{2}){8,})\b`)
)

// decodeBase64 returns the printable texts base64 tokens of s decode to.
func decodeBase64(s string) []string {
	var out []string
	for _, tok := range reBase64.FindAllString(s, 16) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(tok); err == nil {
				if printable(d) {
					out = append(out, string(d))
				}
				break
			}
		}
	}
	return out
}

// decodeHex returns the printable texts hex runs of s decode to.
func decodeHex(s string) []string {
	var out []string
	for _, m := range reHex.FindAllStringSubmatch(s, 16) {
		if d, err := hex.DecodeString(m[1]); err == nil && printable(d) {
			out = append(out, string(d))
		}
	}
	return out
}

// printable: valid UTF-8, mostly letters and spaces — decoded text, not
// the bytes of a hash or an image.
func printable(b []byte) bool {
	if !utf8.Valid(b) || len(b) < 8 {
		return false
	}
	letters, spaces := 0, 0
	for _, r := range string(b) {
		switch {
		case r == ' ':
			spaces++
		case r < ' ' && r != '\n' && r != '\t':
			return false
		case (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 0x7f:
			letters++
		}
	}
	return spaces > 0 && letters*10 >= len(b)*6
}
