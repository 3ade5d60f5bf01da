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
	// words: the rule runs only on sentences holding one of these words
	// (a one-pass word scan decides), so clean text costs no regexp time.
	words string
	re    *regexp.Regexp
}

const (
	gap   = `[^.!?\n]{0,40}?` // a few words within one sentence
	rules = `(?:instructions?|rules|directions|directives|guidelines|guardrails|prompts?|constraints|programming|polic(?:y|ies)|restrictions|filters|limitations|system (?:message|prompt))`
)

var injectionRules = []rule{
	{"ignore-instructions", "ignore disregard forget override bypass neglect skip discard", regexp.MustCompile(`\b(?:ignore|disregard|forget|override|bypass|neglect|skip|discard)\b` + gap + `\b` + rules + `\b`)},
	{"instructions-void", "longer void null revoked cancelled canceled obsolete invalid overridden", regexp.MustCompile(`\b(?:previous|prior|above|earlier|preceding|original|all|old)\s+(?:instructions?|directions|rules|directives|prompts?)\b[^.!?\n]{0,20}?\b(?:no longer appl(?:y|ies)|(?:are|is) (?:now )?(?:void|null|revoked|cancel+ed|obsolete|invalid|overridden)|revoked)`)},
	{"stop-following", "follow follows following obey obeying", regexp.MustCompile(`\b(?:stop|do not|don't|never) (?:follow|obey)(?:ing)?\b` + gap + `\b(?:instructions?|rules|system prompt|guidelines|above)\b`)},
	{"reveal-prompt", "prompt prompts instructions system rules above configuration context message", regexp.MustCompile(`\b(?:reveal|print|show|leak|dump|output|repeat|display|disclose|tell me|give me|write out|spell out)\b` + gap + `\b(?:system (?:prompt|message)|(?:initial|original|hidden|secret|first) (?:prompt|instructions|rules|configuration|message)|(?:your|the) (?:instructions|prompt|rules)|(?:prompt|text|instructions) above|context window)\b`)},
	{"prompt-you-were-given", "given", regexp.MustCompile(`\b(?:instructions|prompt|rules) you (?:were|have been) given\b`)},
	{"repeat-above", "repeat", regexp.MustCompile(`\brepeat (?:the|all|everything|every)\b[^.!?\n]{0,20}?\b(?:above|before|preceding)\b`)},
	{"dump-context", "dump", regexp.MustCompile(`\b(?:dump|print|output)\b[^.!?\n]{0,20}?\b(?:context|memory)\b|\b(?:context|memory)\b[^.!?\n]{0,40}?\bdump\b`)},
	{"reveal-secret", "password secret secrets confidential api credentials", regexp.MustCompile(`\b(?:reveal|output|print|leak|tell me|give me|show me)\b` + gap + `\b(?:password|secrets?|confidential|api keys?|credentials)\b`)},
	{"role-override", "now longer", regexp.MustCompile(`\byou are (?:now|no longer)\b` + gap + `\b(?:dan|jailbr\w*|unfiltered|unrestricted|uncensored|evil|free|bound|restricted|limited|developer mode|an? (?:ai|assistant|model) (?:with(?:out)?|that has no))\b`)},
	{"dan", "dan anything", regexp.MustCompile(`\bdo anything now\b|\b(?:act|acting|play|become) (?:as )?dan\b|\bdan (?:mode|has no)\b`)},
	{"jailbreak", "jailbreak jailbroken jailbreaked jailbreaking", regexp.MustCompile(`\bjailbr(?:eak|oken)(?:ed)? (?:mode|model|ai|assistant|version)\b|\b(?:you are|now|been) jailbr(?:eak|oken)\w*|\bjailbreak (?:enabled|activated|on)\b`)},
	{"developer-mode", "mode override safety filter filters filtering moderation guardrail guardrails", regexp.MustCompile(`\b(?:enter|enable|activate|switch to|turn on)\b[^.!?\n]{0,20}?\b(?:developer|dev|god|admin|debug) mode\b|\bdeveloper override\b|\b(?:safety|filter(?:s|ing)?|moderation|guardrails?)\s*[=:]\s*(?:off|false|0|disabled)\b`)},
	{"no-restrictions", "rules restrictions limitations limits policy policies filter filters filtering guidelines constraints censorship guardrails", regexp.MustCompile(`\b(?:no|without(?: any)?|free from|freed from(?: your| all| the)?)\s+(?:rules|restrictions|limitations|limits|content polic(?:y|ies)|filters?|filtering|guidelines|constraints|censorship|guardrails|ethical guidelines)\b`)},
	{"disable-safety", "safety content moderation", regexp.MustCompile(`\b(?:disable|turn off|bypass|remove|deactivate|switch off|circumvent|ignore)\b[^.!?\n]{0,20}?\b(?:safety|content|moderation)\s*(?:filters?|restrictions|guidelines|measures|policy|policies|checks)?\b`)},
	{"persona-override", "unfiltered unrestricted uncensored evil jailbroken amoral pretend", regexp.MustCompile(`\b(?:act|behave|respond|answer|pretend|roleplay)\b[^.!?\n]{0,30}?\b(?:unfiltered|unrestricted|uncensored|evil|jailbroken|amoral)\b|\b(?:unfiltered|uncensored|unrestricted|evil|amoral) (?:ai|assistant|model|persona|mode|chatbot)\b|\bpretend (?:that )?there are no rules\b`)},
	{"new-task", "new real actual only instead", regexp.MustCompile(`\byour (?:new|real|actual|only) (?:task|role|job|instructions?|purpose|goal) (?:is|are|will be)\b|\bfollow (?:these|my) (?:new )?(?:instructions|commands|orders) (?:instead|only)\b|\bobey only\b|\bfollow my commands only\b`)},
	{"fake-system-turn", "system assistant im_start im_end sys inst instruction", regexp.MustCompile(`</?\s*(?:system|assistant|im_start|im_end|sys)\s*>|\[/?(?:inst|sys)\]|^\s*(?:system|###\s*(?:system|instruction))\s*:[^.!?\n]{0,60}?\b(?:ignore|revoked?|obey|override|must|only|new|disregard|reveal)\b`)},
	{"pwned", "pwned", regexp.MustCompile(`\bi have been pwned\b`)},
	// Polite paraphrases: the same requests without the trigger verbs
	// ("set aside the guidance you were given", "pay no attention to what
	// the developers told you", "the exact wording of your instructions").
	{"set-aside-instructions", "aside side mind head", regexp.MustCompile(`\b(?:set(?:ting)?|put(?:ting)?|lay(?:ing)?|push(?:ing)?|cast(?:ing)?)\b[^.!?\n]{0,60}?\b(?:aside|to one side|out of your (?:mind|head))\b`)},
	{"let-go-of-instructions", "let attention listen", regexp.MustCompile(`\b(?:let go of|pay no attention to|(?:do not|don't|stop) pay(?:ing)? (?:any )?attention to|(?:do not|don't|stop) listen(?:ing)? to)\b[^.!?\n]{0,40}?\b(?:guidance|directions|directives|instructions|rules|polic(?:y|ies)|guidelines|told you|were told|developers?|system prompt|earlier|previous|prior)\b`)},
	{"extract-wording", "wording word verbatim setup configures configuration hidden", regexp.MustCompile(`\b(?:exact wording|word for word|verbatim|everything in your)\b[^.!?\n]{0,60}?\b(?:instructions|prompt|setup|configuration|told you|wrote to you|directives)\b|\b(?:instructions|prompt|setup text|what the developers?|what you were told)\b[^.!?\n]{0,60}?\b(?:word for word|verbatim)\b|\b(?:what the developers? (?:wrote|told|said) (?:to )?you)\b|\b(?:your|the) (?:setup|configuration|hidden) text\b|\btext that (?:configures|sets you up|defines|instructs) you\b|\byour hidden (?:setup|configuration|instructions)\b`)},
	{"no-limits", "limits policies rules restrictions filters guidelines", regexp.MustCompile(`\bwithout (?:your|the|any of your) (?:usual |normal |regular )?(?:limits|rules|restrictions|filters|guidelines|policies)\b|\bas if (?:there were|you had) no (?:rules|policies|restrictions|limits|filters|guidelines)\b`)},
}

// deviceWords: "developer mode" on a phone, browser or OS is a setting,
// not a jailbreak.
var deviceWords = regexp.MustCompile(`\b(?:android|phone|iphone|ipad|ios|pixel|samsung|galaxy|xiaomi|tablet|chrome|chromebook|firefox|edge|browser|extension|windows|macos|mac|xbox|playstation|settings|usb|debugging|sideload|device|app|apps|vs code|router|tv)\b`)

// metaWords: a sentence that quotes an attack phrase to explain it
// ("attackers type phrases like 'ignore all previous instructions'").
var metaWords = regexp.MustCompile(`\b(?:attackers?|phrases? (?:like|such as)|such as|for example|e\.g|known as|called|article|explains?|explaining|defend|detect|training|researchers?|example|quote|quoted|means?)\b`)

// exempt reports a match that is a harmless look-alike: developer mode on
// a device, or an attack phrase quoted inside a sentence about attacks.
func exempt(rule, sentence string, m0, m1 int) bool {
	if rule == "developer-mode" && deviceWords.MatchString(sentence) {
		return true
	}
	q0 := strings.LastIndexAny(sentence[:m0], "\"'“‘«")
	q1 := strings.IndexAny(sentence[m1:], "\"'”’»")
	if q0 < 0 || q1 < 0 {
		return false
	}
	outside := sentence[:q0] + " " + sentence[m1+q1:]
	return metaWords.MatchString(outside)
}

// ruleWords maps each gating word to the rules it wakes.
var ruleWords = func() map[string][]int {
	m := map[string][]int{}
	for i, r := range injectionRules {
		for _, w := range strings.Fields(r.words) {
			m[w] = append(m[w], i)
		}
	}
	return m
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
	if fs := exfiltration(text); fs != nil {
		return fs
	}
	if fs := multilingual(text); fs != nil {
		return fs
	}
	type variant struct{ prefix, text string }
	var vs []variant
	spaced, leet := obfuscated(folded)
	if spaced {
		vs = append(vs, variant{"spaced:", despace(folded)})
	}
	if leet {
		d := unleet(norm)
		vs = append(vs, variant{"leet:", d})
		if spaced {
			vs = append(vs, variant{"leet:", despace(unleet(folded))})
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
	if looksROT13(norm) {
		vs = append(vs, variant{"rot13:", rot13(norm)})
	}
	if looksReversed(norm) {
		vs = append(vs, variant{"reversed:", reverse(norm)})
	}
	if d, ok := percentDecode(text); ok {
		f, _ := fold(d)
		vs = append(vs, variant{"url:", collapse(f)})
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

// matchRules runs the rules on the sentences of s (lower case) that hold
// one of their words. Every rule stays within a sentence (its gaps exclude
// . ! ? and newlines), so this finds what running them on s would.
func matchRules(s, prefix string) []Finding {
	var fs []Finding
	var marked [32]bool
	var woke []int
	start := 0
	flush := func(end int) {
		for _, r := range woke {
			marked[r] = false
			for _, m := range injectionRules[r].re.FindAllStringIndex(s[start:end], -1) {
				if exempt(injectionRules[r].name, s[start:end], m[0], m[1]) {
					continue
				}
				fs = append(fs, Finding{Category: CatInjection, Start: start + m[0], End: start + m[1], Pattern: prefix + injectionRules[r].name})
			}
		}
		woke = woke[:0]
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '.' || c == '!' || c == '?' || c == '\n':
			flush(i)
			i++
			start = i
		case isLetter(c) || c == '_':
			j := i + 1
			for j < len(s) && (isLetter(s[j]) || s[j] == '_') {
				j++
			}
			for _, r := range ruleWords[s[i:j]] {
				if !marked[r] {
					marked[r] = true
					woke = append(woke, r)
				}
			}
			i = j
		default:
			i++
		}
	}
	flush(len(s))
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
	out := make([]byte, 0, len(s))
	word := func(t string) {
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, t...)
	}
	runStart, runLen := -1, 0 // the pending run of single letters
	var run []byte
	flush := func() {
		if runLen >= 3 {
			word(string(run))
		} else {
			for _, c := range run {
				word(string(c))
			}
		}
		run, runStart, runLen = run[:0], -1, 0
	}
	for i := 0; i < len(s); {
		if isSep(rune(s[i])) {
			// a gap of two or more spaces ends a spelled-out word
			j := i
			for j < len(s) && isSep(rune(s[j])) {
				j++
			}
			if strings.Contains(s[i:j], "  ") {
				flush()
			}
			i = j
			continue
		}
		j := i
		for j < len(s) && !isSep(rune(s[j])) {
			j++
		}
		if j-i == 1 && isLetter(s[i]) {
			if runStart < 0 {
				runStart = i
			}
			run = append(run, s[i])
			runLen++
		} else {
			flush()
			word(s[i:j])
		}
		i = j
	}
	flush()
	return string(out)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }
func isSep(r rune) bool    { return r == ' ' || r == '.' || r == '-' || r == '_' || r == '*' || r == '\n' }

// unleet reads digits and symbols inside words as the letters they stand
// for (1gn0r3 → ignore). Tokens of digits only are numbers and stay.
func unleet(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		j := i
		letters := false
		for j < len(b) && b[j] != ' ' {
			letters = letters || isLetter(b[j])
			j++
		}
		if letters {
			for k := i; k < j; k++ {
				switch b[k] {
				case '0':
					b[k] = 'o'
				case '1', '!', '|':
					b[k] = 'i'
				case '3':
					b[k] = 'e'
				case '4', '@':
					b[k] = 'a'
				case '5', '$':
					b[k] = 's'
				case '7', '+':
					b[k] = 't'
				case '8':
					b[k] = 'b'
				case '9':
					b[k] = 'g'
				}
			}
		}
		i = j + 1
	}
	return string(b)
}

// obfuscated reports, in one pass, whether s (folded) has letters written
// one at a time or joined by punctuation (three single letters in a row,
// or "word.word"), and words mixing letters with digits or symbols (l33t):
// only then are those variants worth building.
func obfuscated(s string) (spaced, leet bool) {
	singles := 0
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		j := i
		letters, others := 0, 0
		for j < len(s) && s[j] != ' ' {
			c := s[j]
			switch {
			case isLetter(c):
				letters++
			case isSep(rune(c)):
				if j > i && j+1 < len(s) && isLetter(s[j-1]) && isLetter(s[j+1]) {
					spaced = true
				}
			case c == '\n':
			default:
				others++
			}
			j++
		}
		if j-i == 1 && letters == 1 {
			singles++
			if singles >= 3 {
				spaced = true
			}
		} else {
			singles = 0
		}
		if letters > 0 && others > 0 {
			leet = true
		}
		if spaced && leet {
			return
		}
		i = j
	}
	return
}

// tokens returns the runs of at least min bytes of which ok holds (at most
// 16: an attack is not the 17th blob of a prompt).
func tokens(s string, min int, ok func(c byte) bool) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < 16; {
		if !ok(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && ok(s[j]) {
			j++
		}
		if j-i >= min {
			out = append(out, s[i:j])
		}
		i = j
	}
	return out
}

func base64Char(c byte) bool {
	return isLetter(c|0x20) || isDigit(c) || c == '+' || c == '/' || c == '_' || c == '-' || c == '='
}

func hexChar(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// decodeBase64 returns the printable texts base64 tokens of s decode to.
func decodeBase64(s string) []string {
	var out []string
	for _, tok := range tokens(s, 16, base64Char) {
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
	for _, tok := range tokens(s, 16, hexChar) {
		if len(tok)%2 == 1 {
			tok = tok[:len(tok)-1]
		}
		if d, err := hex.DecodeString(tok); err == nil && printable(d) {
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
