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
	r0, n0 := rune(text[i]), 1
	if r0 >= utf8.RuneSelf {
		r0, n0 = utf8.DecodeRuneInString(text[i:])
	}
	// (?i:'s|'t|'re|'ve|'m|'ll|'d): only ASCII letters fold to these.
	if r0 == '\'' && i+1 < len(text) {
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
	// \p{N}{1,3}
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
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`: the space is taken only when such a
	// character follows (a space is \s itself).
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
			for j < len(text) && (text[j] == '\r' || text[j] == '\n') {
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
