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
	CatInjection = "prompt-injection"
)

// LocalCategories lists the local engine's categories in report order.
var LocalCategories = []string{CatEmail, CatPhone, CatCard, CatSSN, CatIP, CatIBAN, CatInjection}

var labels = map[string]string{
	CatEmail: "[EMAIL]", CatPhone: "[PHONE]", CatCard: "[CREDIT_CARD]", CatSSN: "[SSN]",
	CatIP: "[IP_ADDRESS]", CatIBAN: "[IBAN]", CatInjection: "[PROMPT_INJECTION]",
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
	reEmail = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}`)
	// Phone numbers: international (+CC …), NANP with separators, and
	// national numbers with a trunk 0 written in groups. Bare digit runs
	// are never phones: they are far more often ids, amounts or years.
	rePhoneIntl = regexp.MustCompile(`\+\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){2,6}`)
	rePhoneNANP = regexp.MustCompile(`(?:\(\d{3}\)\s?|\b\d{3}[.\- ])\d{3}[.\- ]\d{4}\b`)
	rePhoneNat  = regexp.MustCompile(`\b0\d{2,4}[ \-]\d{3,6}(?:[ \-]\d{3,4})?\b`)
	reCard      = regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`)
	reSSN       = regexp.MustCompile(`\b(\d{3})([\- ])(\d{2})([\- ])(\d{4})\b`)
	reSSNBare   = regexp.MustCompile(`(?i)\bssn\W{0,4}(\d{9})\b`)
	reIPv4      = regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b`)
	reIPv6      = regexp.MustCompile(`[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}`)
	reIBAN      = regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`)
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
	if strings.IndexByte(text, '@') >= 0 {
		for _, m := range reEmail.FindAllStringIndex(text, -1) {
			add(CatEmail, m[0], m[1])
		}
	}
	if !hasDigit(text) {
		return fs
	}
	for _, m := range reIBAN.FindAllStringIndex(text, -1) {
		if s, e, ok := iban(text, m[0], m[1]); ok {
			add(CatIBAN, s, e)
		}
	}
	for _, m := range reCard.FindAllStringIndex(text, -1) {
		if card(text[m[0]:m[1]]) {
			add(CatCard, m[0], m[1])
		}
	}
	for _, m := range reSSN.FindAllStringSubmatchIndex(text, -1) {
		g := func(i int) string { return text[m[2*i]:m[2*i+1]] }
		if g(2) == g(4) && ssn(g(1), g(3), g(5)) {
			add(CatSSN, m[0], m[1])
		}
	}
	for _, m := range reSSNBare.FindAllStringSubmatchIndex(text, -1) {
		d := text[m[2]:m[3]]
		if ssn(d[:3], d[3:5], d[5:]) {
			add(CatSSN, m[2], m[3])
		}
	}
	if strings.IndexByte(text, '.') >= 0 {
		for _, m := range reIPv4.FindAllStringIndex(text, -1) {
			if ipv4(text, m[0], m[1]) {
				add(CatIP, m[0], m[1])
			}
		}
	}
	if strings.Count(text, ":") >= 2 {
		for _, m := range reIPv6.FindAllStringIndex(text, -1) {
			if ipv6(text, m[0], m[1]) {
				add(CatIP, m[0], m[1])
			}
		}
	}
	for _, re := range []*regexp.Regexp{rePhoneIntl, rePhoneNANP, rePhoneNat} {
		for _, m := range re.FindAllStringIndex(text, -1) {
			s, e := m[0], m[1]
			for e > s && !isDigit(text[e-1]) { // a trailing ")" or separator
				e--
			}
			if n := digits(text[s:e]); n >= 7 && n <= 15 && !versionLike(text, s, e) {
				add(CatPhone, s, e)
			}
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	return fs
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
	// "version 1.2.3.4" and "v1.2.3.4" are versions.
	before := strings.ToLower(text[max(0, s-9):s])
	return !strings.Contains(before, "version")
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
		c := strings.ReplaceAll(text[s:e], " ", "")
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
