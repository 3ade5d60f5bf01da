package tokenize

import (
	"unicode"
	"unicode/utf8"
)

// cl100kPiece returns the end of the pre-tokenizer piece of cl100k_base
// that starts at text[i]: what the regex of patterns[CL100K] matches
// there, found without a regex engine. regexp2 cost most of a count
// (4 MB/s on prose; a small-context model's prompt is counted on every
// request: issue 29), with a match object and a []rune of the text on
// the heap. The alternatives are tried in the pattern's order, each with
// the regex's backtracking worked out (comments below); TestSplitMatchesRegex
// and FuzzSplit hold it to regexp2's pieces. text is valid UTF-8 (encode
// makes it so) and every position starts some piece.
func cl100kPiece(text string, i int) int {
	r0, n0 := decode(text, i)
	if j := contraction(text, i); j > i {
		return j
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isLetter(r0) {
		return letters(text, i+n0)
	}
	if r0 != '\r' && r0 != '\n' && !isNumber(r0) && i+n0 < len(text) {
		if r1, _ := decode(text, i+n0); isLetter(r1) {
			return letters(text, i+n0)
		}
	}
	return rest(text, i, r0, n0, false)
}

// rest is the pieces both patterns end with, tried from the numbers on:
// \p{N}{1,3}, ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`), then
// the three kinds of white space.
func rest(text string, i int, r0 rune, n0 int, slash bool) int {
	if isNumber(r0) {
		j := i + n0
		for k := 1; k < 3 && j < len(text); k++ {
			r, n := decode(text, j)
			if !isNumber(r) {
				break
			}
			j += n
		}
		return j
	}
	// The space is taken only when such a character follows (a space is
	// \s itself).
	j := i
	if r0 == ' ' {
		j++
	}
	if j < len(text) {
		if r, _ := decode(text, j); isOther(r) {
			for j < len(text) {
				r, n := decode(text, j)
				if !isOther(r) {
					break
				}
				j += n
			}
			for j < len(text) && (text[j] == '\r' || text[j] == '\n' || slash && text[j] == '/') {
				j++
			}
			return j
		}
	}
	// What is left starts with white space: its run is text[i:e].
	e, last, lastNL := i, i, -1
	for e < len(text) {
		r, n := decode(text, e)
		if !unicode.IsSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = e
		}
		last = e
		e += n
	}
	switch {
	case lastNL >= 0:
		// \s*[\r\n]+: \s* gives back down to the run's last \r or \n.
		return lastNL + 1
	case e == len(text):
		// \s+(?!\S) at the end of the text: the whole run.
		return e
	case last > i:
		// \s+(?!\S): the run but its last character, which the lookahead
		// sees as white space.
		return last
	default:
		return e // \s+
	}
}

// contraction is the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at text[i], or
// i. Only ASCII letters fold to these.
func contraction(text string, i int) int {
	if i+1 >= len(text) || text[i] != '\'' {
		return i
	}
	switch text[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(text) && text[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(text) && text[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return i
}

// o200kPiece is cl100kPiece for o200k_base's pattern (patterns[O200K]):
// its words split by case, U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// W = [\p{Ll}\p{Lm}\p{Lo}\p{M}], which overlap (modifier and other
// letters, marks), so U* gives back characters to W+ (upperLower).
func o200kPiece(text string, i int) int {
	r0, n0 := decode(text, i)
	prefix := r0 != '\r' && r0 != '\n' && !isLetter(r0) && !isNumber(r0) // [^\r\n\p{L}\p{N}]
	// P? U* W+ C?, with the prefix, then without (a mark is both a
	// prefix and in U and W).
	if prefix && i+n0 < len(text) {
		if e := upperLower(text, i+n0); e > 0 {
			return contraction(text, e)
		}
	}
	if e := upperLower(text, i); e > 0 {
		return contraction(text, e)
	}
	// P? U+ W* C?, likewise.
	if prefix && i+n0 < len(text) {
		if e := upperThenLower(text, i+n0); e > 0 {
			return contraction(text, e)
		}
	}
	if e := upperThenLower(text, i); e > 0 {
		return contraction(text, e)
	}
	return rest(text, i, r0, n0, true)
}

// upperLower is the end of U* W+ at text[j], or 0. U* takes its longest
// run; if W+ cannot start after it, U* gives back up to the run's last
// character that is also in W, which is then W+'s only character.
func upperLower(text string, j int) int {
	k, lastW := j, -1
	for k < len(text) {
		r, n := decode(text, k)
		if !inU(r) {
			break
		}
		if inW(r) {
			lastW = k + n
		}
		k += n
	}
	if k < len(text) {
		if r, _ := decode(text, k); inW(r) {
			return runOf(text, k, inW)
		}
	}
	if lastW > 0 {
		return lastW
	}
	return 0
}

// upperThenLower is the end of U+ W* at text[j], or 0.
func upperThenLower(text string, j int) int {
	k := runOf(text, j, inU)
	if k == j {
		return 0
	}
	return runOf(text, k, inW)
}

// runOf is the end of the run of characters in class from text[j].
func runOf(text string, j int, class func(rune) bool) int {
	for j < len(text) {
		r, n := decode(text, j)
		if !class(r) {
			break
		}
		j += n
	}
	return j
}

// inU is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], inW [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func inU(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func inW(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

func decode(text string, i int) (rune, int) {
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

// letters returns the end of the run of letters from text[j].
func letters(text string, j int) int {
	for j < len(text) {
		r, n := decode(text, j)
		if !isLetter(r) {
			break
		}
		j += n
	}
	return j
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r|0x20 >= 'a' && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !unicode.IsSpace(r) && !isLetter(r) && !isNumber(r) }
