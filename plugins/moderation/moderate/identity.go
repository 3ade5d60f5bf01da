package moderate

import (
	"regexp"
	"strings"
)

// Passport numbers have no checksum a text shows and look like any order
// or part number, so (as in Presidio's passport recognizers) one counts
// only right after a word that names it: the first token of 6–9 capitals
// and digits, at least five of them digits, within a few words.
var passportWords = []string{"passport", "passeport", "pasaporte", "passaporto", "passaporte", "reisepass", "passnummer", "паспорт"}

func passports(text string, add func(cat string, s, e int)) {
	for _, w := range passportWords {
		for i := indexFold(text, w, 0); i >= 0; i = indexFold(text, w, i+len(w)) {
			// skip the rest of the context word ("Reisepassnummer") and
			// the filler after it ("no.", "number", "#", ":")
			j := i + len(w)
			end := min(len(text), j+40)
			for j < end {
				for j < end && !isAlnum(text[j]) {
					j++
				}
				k := j
				for k < end && isAlnum(text[k]) {
					k++
				}
				if k == end && end < len(text) && isAlnum(text[end]) {
					break
				}
				if tok := text[j:k]; passportToken(tok) && bounded(text, j, k) {
					add(CatPassport, j, k)
					break
				}
				j = k
			}
		}
	}
}

func passportToken(t string) bool {
	if len(t) < 6 || len(t) > 9 {
		return false
	}
	d := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case isDigit(c):
			d++
		case c >= 'A' && c <= 'Z':
		default:
			return false
		}
	}
	return d >= 5
}

// Street addresses: a house number and a street name with its kind
// (English, German, French, Spanish, Italian, Portuguese conventions).
// Names of streets are ordinary words, so a match counts only with
// context: a word that introduces an address before it, or a postal code
// after it.
var (
	reAddrEN    = regexp.MustCompile(`\b\d{1,5}[A-Za-z]?\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Terrace|Way|Court|Ct|Place|Pl|Parkway|Pkwy|Square|Sq|Highway|Hwy|Close|Crescent|Gardens|Row)\b\.?(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?`)
	reAddrDE    = regexp.MustCompile(`\b[A-ZÄÖÜ][a-zäöüß\-]*(?:straße|strasse|weg|allee|platz|gasse|ring|damm|ufer)\s+\d{1,4}\s?[a-z]?\b|\b[A-ZÄÖÜ][a-zäöüß]+ (?:Straße|Strasse|Weg|Allee|Platz|Gasse)\s+\d{1,4}\s?[a-z]?\b`)
	reAddrFR    = regexp.MustCompile(`\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|boulevard|bd|place|chemin|allée|impasse|quai|route)\s+(?:de la |de l'|du |des |de |d')?[\p{Lu}][\p{L}'\-]+(?:\s[\p{Lu}][\p{L}'\-]+)*`)
	reAddrRO    = regexp.MustCompile(`\b(?:Calle|C/|Avenida|Avda\.|Plaza|Paseo|Via|Viale|Piazza|Corso|Largo|Rua|Travessa|Praça)\s+(?:[\p{Lu}][\p{L}'\-]+\s+){1,3},?\s*(?:n\.?|nº|no\.?)?\s*\d{1,4}\b`)
	rePostcode  = regexp.MustCompile(`^[\s,]*(?:\d{5}\b|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b|[A-Z]{2}\s\d{5}\b|[A-Z][\p{L}\s]{1,30},\s*(?:[A-Z]{2}\s\d{5}|\d{5}))`)
	addrContext = []string{"address", "adresse", "anschrift", "dirección", "direccion", "indirizzo", "endereço", "endereco", "live at", "lives at", "living at", "wohne", "wohnhaft", "ship", "send", "deliver", "located at", "domicile", "reside", "mail it", "post it", "moved to", "адрес"}
)

// streetWords gate the address patterns: they run only on a window around
// a word that names a kind of street.
var streetWords = map[string]bool{
	"street": true, "st": true, "avenue": true, "ave": true, "road": true, "rd": true, "boulevard": true, "blvd": true,
	"lane": true, "ln": true, "drive": true, "dr": true, "terrace": true, "way": true, "court": true, "ct": true,
	"place": true, "pl": true, "parkway": true, "pkwy": true, "square": true, "sq": true, "highway": true, "hwy": true,
	"close": true, "crescent": true, "gardens": true, "row": true,
	"rue": true, "bd": true, "chemin": true, "impasse": true, "quai": true, "route": true,
	"calle": true, "avenida": true, "avda": true, "plaza": true, "paseo": true, "via": true, "viale": true,
	"piazza": true, "corso": true, "largo": true, "rua": true, "travessa": true, "c": true,
	"weg": true, "allee": true, "platz": true, "gasse": true, "ring": true, "damm": true, "ufer": true,
}

func addresses(text string, add func(cat string, s, e int)) {
	var ws [][2]int
	for i := 0; i < len(text); {
		if !isLetterByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isLetterByte(text[j]) {
			j++
		}
		w := text[i:j]
		var buf [16]byte
		hit := len(w) <= len(buf) && streetWords[string(lowerASCII(buf[:0], w))]
		if !hit && len(w) > 6 {
			l := w[len(w)-7:]
			hit = strings.HasSuffix(l, "straße") || strings.HasSuffix(l, "strasse") || strings.HasSuffix(l, "weg") || strings.HasSuffix(l, "allee") || strings.HasSuffix(l, "platz")
		}
		if hit {
			s, e := max(0, i-60), min(len(text), j+40)
			if n := len(ws); n > 0 && s <= ws[n-1][1] {
				ws[n-1][1] = e
			} else {
				ws = append(ws, [2]int{s, e})
			}
		}
		i = j
	}
	for _, w := range ws {
		for _, re := range []*regexp.Regexp{reAddrEN, reAddrDE, reAddrFR, reAddrRO} {
			each(re, text, w, func(s, e int) {
				if !bounded(text, s, e) {
					return
				}
				// the postal code and town that follow belong to it
				if m := rePostcode.FindStringIndex(text[e:min(len(text), e+48)]); m != nil {
					add(CatAddress, s, e+m[1])
					return
				}
				before := strings.ToLower(text[max(0, s-60):s])
				for _, c := range addrContext {
					if strings.Contains(before, c) {
						add(CatAddress, s, e)
						return
					}
				}
			})
		}
	}
}

// isLetterByte: an ASCII letter or a byte of a non-ASCII character (the
// word scans treat "Musterstraße" as one word).
func isLetterByte(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80 }

// lowerASCII appends w lower-cased (ASCII letters only) to b: a map lookup
// with string(b) does not allocate, where strings.ToLower on every word of
// a long text would.
func lowerASCII(b []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
