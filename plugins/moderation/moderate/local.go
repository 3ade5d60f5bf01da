package moderate

import (
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// Categories of the local engine, as they appear in policies, reasons and
// stage data. The labels are what redaction writes in place of a match
// (the same labels as the public gateway's guardrails).
const (
	CatEmail     = "email"
	CatPhone     = "phone"
	CatCard      = "credit-card"
	CatSSN       = "ssn"
	CatIP        = "ip-address"
	CatIBAN      = "iban"
	CatPassport  = "passport"
	CatAddress   = "address"
	CatSecret    = "secret"
	CatInjection = "prompt-injection"
)

// LocalCategories lists the local engine's categories in report order.
var LocalCategories = []string{CatEmail, CatPhone, CatCard, CatSSN, CatIP, CatIBAN, CatPassport, CatAddress, CatSecret, CatInjection}

var labels = map[string]string{
	CatEmail: "[EMAIL]", CatPhone: "[PHONE]", CatCard: "[CREDIT_CARD]", CatSSN: "[SSN]",
	CatIP: "[IP_ADDRESS]", CatIBAN: "[IBAN]", CatPassport: "[PASSPORT]", CatAddress: "[ADDRESS]",
	CatSecret: "[SECRET]", CatInjection: "[PROMPT_INJECTION]",
}

// Label is what redaction writes in place of a finding of category cat.
func Label(cat string) string {
	if l, ok := labels[cat]; ok {
		return l
	}
	return "[" + strings.ToUpper(strings.NewReplacer("-", "_", "/", "_").Replace(cat)) + "]"
}

// Finding is one thing an engine found in one text.
type Finding struct {
	Category string
	// Start and End are the byte span in the text; both 0 when the finding
	// has no span (a classifier's verdict, or an injection found only after
	// decoding): redacting it replaces the whole text.
	Start, End int
	// Pattern names the rule that matched (prompt injection), e.g.
	// "ignore-instructions" or "base64:ignore-instructions".
	Pattern string
}

// Spanless reports whether the finding covers the whole text.
func (f Finding) Spanless() bool { return f.Start == 0 && f.End == 0 }

// RE2 (Go's regexp) runs in time linear in the input, so no input can make
// these patterns backtrack; \b is ASCII-only, which is what numbers need.
var (
	// E-mail, internationalised too (RFC 6531 local parts and IDNA
	// domains: jürgen@müller.de, ivan@пример.рф, zhang@例子.中国).
	reEmail = regexp.MustCompile(`[\p{L}\p{N}._%+\-]+@[\p{L}\p{N}\-]+(?:\.[\p{L}\p{N}\-]+)*\.(?:[A-Za-z]{2,24}|xn--[a-z0-9\-]{2,59}|\p{L}{2,24})`)
	// Phone numbers: international (+CC …), NANP with separators, and
	// national numbers with a trunk 0 written in groups. Bare digit runs
	// are never phones: they are far more often ids, amounts or years.
	rePhoneIntl = regexp.MustCompile(`\+\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){2,6}`)
	rePhoneNANP = regexp.MustCompile(`(?:\(\d{3}\)\s?|\b\d{3}[.\- ])\d{3}[.\- ]\d{4}\b`)
	// national numbers with a trunk 0: an area code and the subscriber
	// number in groups (030 12345678, 030/9018 2235, 0161 496 0000), and
	// the French ten digits in pairs with one kind of separator.
	rePhoneNat = regexp.MustCompile(`\b0\d{2,4}(?:[ \-]|\s?/\s?)\d{3,8}(?:[ \-]\d{2,5})?\b`)
	// Five pairs are also how lottery draws and dates are written, so the
	// French format counts after a word that names a phone number.
	rePhoneFR = regexp.MustCompile(`\b0[1-9](?: \d{2}){4}\b|\b0[1-9](?:\.\d{2}){4}\b|\b0[1-9](?:-\d{2}){4}\b`)
	reCard    = regexp.MustCompile(`\b\d(?:[ .\-]?\d){12,18}\b`)
	reSSN     = regexp.MustCompile(`\b(\d{3})([\- ])(\d{2})([\- ])(\d{4})\b`)
	reIPv4    = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	reIPv6    = regexp.MustCompile(`[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}`)
	reIBAN    = regexp.MustCompile(`\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?\b`)
)

// Local runs the local engine on one text.
func Local(text string) []Finding {
	var fs []Finding
	fs = append(fs, pii(text)...)
	fs = append(fs, Injection(text)...)
	return fs
}

// pii finds personal data. Overlapping findings keep the first kind found
// in this order (a card number is not also reported as a phone number).
func pii(text string) []Finding {
	var fs []Finding
	taken := func(s, e int) bool {
		for _, f := range fs {
			if s < f.End && e > f.Start {
				return true
			}
		}
		return false
	}
	add := func(cat string, s, e int) {
		if !taken(s, e) {
			fs = append(fs, Finding{Category: cat, Start: s, End: e})
		}
	}
	// The patterns run on small windows, not on the whole text: around
	// each "@" for e-mail, on each run of digits and separators for the
	// numbers, around each "CC00" for IBANs and each "::"-bearing token for
	// IPv6. Prose is mostly neither, so a long clean text costs a few
	// byte scans (Go's regexp costs far more per byte than a scan).
	// Credentials first: their digits must not read as cards or phones.
	secrets(text, add)
	for _, w := range around(text, "@", 64, 256) {
		each(reEmail, text, w, func(s, e int) { add(CatEmail, s, e) })
	}
	if !hasDigit(text) {
		sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
		return fs
	}
	passports(text, add)
	addresses(text, add)
	for _, w := range ibanStarts(text) {
		each(reIBAN, text, w, func(s, e int) {
			if s == w[0] && bounded(text, s, s) {
				if s, e, ok := iban(text, s, e); ok {
					add(CatIBAN, s, e)
				}
			}
		})
	}
	// Each run is counted once, and a pattern runs only on runs that could
	// hold its kind: a regexp call costs far more than the count.
	for _, w := range numericRuns(text) {
		nd, dots := digits(text[w[0]:w[1]]), strings.Count(text[w[0]:w[1]], ".")
		if nd >= 13 {
			each(reCard, text, w, func(s, e int) {
				if bounded(text, s, e) && card(text[s:e]) {
					add(CatCard, s, e)
				}
			})
		}
		if nd >= 9 {
			for _, m := range reSSN.FindAllStringSubmatchIndex(text[w[0]:w[1]], -1) {
				g := func(i int) string { return text[w[0]+m[2*i] : w[0]+m[2*i+1]] }
				if s, e := w[0]+m[0], w[0]+m[1]; bounded(text, s, e) && g(2) == g(4) && ssn(g(1), g(3), g(5)) {
					add(CatSSN, s, e)
				}
			}
			// nine bare digits right after "SSN"
			s, e := w[0], w[1]
			for s < e && !isDigit(text[s]) {
				s++
			}
			for e > s && !isDigit(text[e-1]) {
				e--
			}
			if e-s == 9 && digits(text[s:e]) == 9 && bounded(text, s, e) && ssnBefore(text, s) && ssn(text[s:s+3], text[s+3:s+5], text[s+5:e]) {
				add(CatSSN, s, e)
			}
		}
		if dots >= 3 {
			each(reIPv4, text, w, func(s, e int) {
				if bounded(text, s, e) && ipv4(text, s, e) {
					add(CatIP, s, e)
				}
			})
		}
		if nd >= 7 {
			for _, re := range []*regexp.Regexp{rePhoneIntl, rePhoneNANP, rePhoneNat} {
				each(re, text, w, func(s, e int) {
					for e > s && !isDigit(text[e-1]) { // a trailing ")" or separator
						e--
					}
					if n := digits(text[s:e]); n >= 7 && n <= 15 && !versionLike(text, s, e) && bounded(text, s, e) {
						add(CatPhone, s, e)
					}
				})
			}
			each(rePhoneFR, text, w, func(s, e int) {
				if bounded(text, s, e) && !versionLike(text, s, e) && phoneBefore(text, s) {
					add(CatPhone, s, e)
				}
			})
		}
	}
	for _, w := range around(text, ":", 40, 40) {
		each(reIPv6, text, w, func(s, e int) {
			if bounded(text, s, e) && ipv6(text, s, e) {
				add(CatIP, s, e)
			}
		})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	return fs
}

// each calls fn with the spans (in text) of re's matches inside window w.
func each(re *regexp.Regexp, text string, w [2]int, fn func(s, e int)) {
	for _, m := range re.FindAllStringIndex(text[w[0]:w[1]], -1) {
		fn(w[0]+m[0], w[0]+m[1])
	}
}

// bounded reports that text[s:e] is not glued to letters or digits: the
// windows cut the text, so a pattern's \b at a window edge proves nothing.
func bounded(text string, s, e int) bool {
	alnum := func(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	return (s == 0 || !alnum(text[s-1])) && (e >= len(text) || e == s || !alnum(text[e]))
}

// around returns windows of before/after bytes around each occurrence of
// sep, merged where they overlap.
func around(text, sep string, before, after int) [][2]int {
	var ws [][2]int
	for i := 0; ; {
		j := strings.Index(text[i:], sep)
		if j < 0 {
			return ws
		}
		j += i
		s, e := max(0, j-before), min(len(text), j+len(sep)+after)
		if n := len(ws); n > 0 && s <= ws[n-1][1] {
			ws[n-1][1] = e
		} else {
			ws = append(ws, [2]int{s, e})
		}
		i = j + len(sep)
	}
}

// numericRuns returns the runs of digits and the separators numbers are
// written with (" -.()+/") that hold at least four digits: every card, SSN,
// phone number and IPv4 address is inside one.
func numericRuns(text string) [][2]int {
	var ws [][2]int
	start, n := -1, 0
	for i := 0; i <= len(text); i++ {
		in := false
		if i < len(text) {
			switch c := text[i]; {
			case isDigit(c):
				in = true
				n++
			case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '+' || c == '/':
				in = true
			}
		}
		if in && start < 0 {
			start, n = i, 0
			if isDigit(text[i]) {
				n = 1
			}
		}
		if !in && start >= 0 {
			if n >= 4 {
				ws = append(ws, [2]int{start, i})
			}
			start = -1
		}
	}
	return ws
}

// ibanStarts returns windows starting at each "CC00" (two letters of one
// case, two digits) that begins a word: where an IBAN may start (written
// in lower case too: the checksum, not the case, tells an IBAN).
func ibanStarts(text string) [][2]int {
	var ws [][2]int
	up := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	lo := func(c byte) bool { return c >= 'a' && c <= 'z' }
	for i := 0; i+4 <= len(text); i++ {
		if (up(text[i]) && up(text[i+1]) || lo(text[i]) && lo(text[i+1])) && isDigit(text[i+2]) && isDigit(text[i+3]) && bounded(text, i, i) {
			ws = append(ws, [2]int{i, min(len(text), i+42)})
		}
	}
	return ws
}

// ssnBefore reports a word naming an SSN ("SSN", "SS#", "social
// security") just before position s: nine bare digits are an SSN only
// then (Presidio's context words for its US_SSN recognizer).
func ssnBefore(text string, s int) bool {
	b := strings.ToLower(text[max(0, s-32):s])
	return strings.Contains(b, "ssn") || strings.Contains(b, "ss#") || strings.Contains(b, "social security") || strings.Contains(b, "soc. sec")
}

// phoneWords name a phone number in the languages whose formats the
// engine knows.
var phoneWords = []string{"phone", "tel", "call", "ring", "mobile", "cell", "fax", "contact", "reach", "appel", "numéro", "portable", "joignable", "fixe", "handy", "ruf", "nummer", "teléfono", "telefono", "llama", "chiama", "cellulare", "telefone", "ligue"}

func phoneBefore(text string, s int) bool {
	b := strings.ToLower(text[max(0, s-40):s])
	for _, w := range phoneWords {
		if strings.Contains(b, w) {
			return true
		}
	}
	return false
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	return n
}

// versionLike reports a dotted number glued to more dots or letters
// (1.2.3.4.5, v10.0.0.1): a version, not an address or a phone.
func versionLike(text string, s, e int) bool {
	if s > 0 {
		c := text[s-1]
		if c == 'v' || c == 'V' || c == '.' || c == '_' || isDigit(c) {
			return true
		}
		// one group of a longer dashed code (2023-0415-8821-77)
		if c == '-' && s > 1 && isDigit(text[s-2]) {
			return true
		}
	}
	if e < len(text) {
		c := text[e]
		if c == '_' || isDigit(c) || ((c == '.' || c == '-') && e+1 < len(text) && isDigit(text[e+1])) {
			return true
		}
	}
	return false
}

// card checks a candidate card number: 13–19 digits, one kind of separator
// at most, a known issuer prefix and the Luhn checksum.
func card(s string) bool {
	var d []byte
	sep := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isDigit(c) {
			d = append(d, c-'0')
			continue
		}
		if sep != 0 && c != sep {
			return false
		}
		sep = c
	}
	if len(d) < 13 || len(d) > 19 || !issuer(d) {
		return false
	}
	return Luhn(d)
}

// issuer reports a known card network prefix (Visa, Mastercard, Amex,
// Discover, JCB, Diners, UnionPay, Maestro).
func issuer(d []byte) bool {
	p2 := int(d[0])*10 + int(d[1])
	p4 := p2*100 + int(d[2])*10 + int(d[3])
	switch {
	case d[0] == 4:
		return true
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720:
		return true
	case p2 == 34 || p2 == 37 || p2 == 36 || p2 == 38 || p2 == 35 || p2 == 30:
		return true
	case p4 == 6011 || p2 == 65 || (p4 >= 6440 && p4 <= 6499) || p2 == 62:
		return true
	case p2 == 50 || (p2 >= 56 && p2 <= 58) || p2 == 63 || p2 == 67:
		return true
	}
	return false
}

// Luhn reports whether the digits pass the Luhn (mod 10) check.
func Luhn(d []byte) bool {
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		x := int(d[i])
		if (len(d)-1-i)%2 == 1 {
			x *= 2
			if x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0
}

// ssn checks the SSA's rules: area not 000, 666 or 900–999, group not 00,
// serial not 0000.
func ssn(area, group, serial string) bool {
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}

func ipv4(text string, s, e int) bool {
	if versionLike(text, s, e) {
		return false
	}
	if a, err := netip.ParseAddr(text[s:e]); err != nil || !a.Is4() {
		return false // an octet above 255, or a leading zero
	}
	if mask(text[s:e]) {
		return false
	}
	// "version 1.2.3.4", "upgrade from 1.2.3.4" are versions; a netmask
	// is not an address either.
	before := strings.ToLower(text[max(0, s-24):s])
	for _, w := range []string{"version", "release", "upgrade", "update", "build", "firmware", "netmask", "mask"} {
		if strings.Contains(before, w) {
			return false
		}
	}
	return true
}

// mask reports a subnet mask (255.255.255.0): ones, then zeros.
func mask(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	return b[0] == 255 && (^v)&(^v+1) == 0
}

func ipv6(text string, s, e int) bool {
	c := text[s:e]
	if strings.Count(c, ":") < 2 || !strings.ContainsAny(c, "0123456789abcdefABCDEF") {
		return false
	}
	a, err := netip.ParseAddr(c)
	return err == nil && a.Is6()
}

// iban checks a candidate IBAN: shrinking it from the end (the pattern may
// have swallowed a following word) until the ISO 7064 mod-97 check holds.
func iban(text string, s, e int) (int, int, bool) {
	for e-s >= 15 {
		c := strings.ToUpper(strings.ReplaceAll(text[s:e], " ", ""))
		if n, ok := ibanLength[c[:2]]; (!ok || n == len(c)) && len(c) >= 15 && len(c) <= 34 && Mod97(c) {
			return s, e, true
		}
		// drop the last group (and its space)
		i := strings.LastIndexByte(text[s:e], ' ')
		if i <= 0 {
			return 0, 0, false
		}
		e = s + i
	}
	return 0, 0, false
}

// ibanLength are the lengths of the commonest countries' IBANs (the IBAN
// registry); other countries are checked by the checksum only.
var ibanLength = map[string]int{
	"AT": 20, "BE": 16, "CH": 21, "CZ": 24, "DE": 22, "DK": 18, "ES": 24, "FI": 18, "FR": 27,
	"GB": 22, "IE": 22, "IT": 27, "LU": 20, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "SE": 24,
}

// Mod97 reports whether an IBAN (no spaces) passes the ISO 7064 mod-97-10
// check: country code and check digits moved to the end, letters as 10–35.
func Mod97(s string) bool {
	if len(s) < 5 {
		return false
	}
	r := s[4:] + s[:4]
	m := 0
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case isDigit(c):
			m = (m*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			m = (m*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return m == 1
}
