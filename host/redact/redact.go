// Package redact removes secrets from text the gateway shows or keeps:
// upstream error messages that reach clients, logs and generation records.
//
// Replacing the whole secret is not enough. Providers echo a rejected key
// partly masked ("Incorrect API key provided: sk-abcd1234****wxyz"), URL
// encoded, or cut; the unmasked ends of such an echo are still part of the
// secret, and a long prefix narrows it. So besides every full occurrence,
// a word — a run of characters up to a space or quote — is replaced when it
// contains eight or more consecutive characters of the secret, or when it
// looks masked (has '*' or '…') and starts or ends like the secret.
package redact

import (
	"net/url"
	"strings"
)

// Marker replaces what was removed.
const Marker = "[redacted]"

// minRun is the shortest run of a secret's characters that counts as a leak
// inside a word: long enough that ordinary words and ids do not match by
// chance, short enough that a 12-character prefix of a key is caught.
const minRun = 8

// Secret returns text without secret, in full, URL-encoded or partly
// masked. Secrets shorter than minRun are left alone (they cannot be told
// from ordinary text).
func Secret(text, secret string) string {
	if len(secret) < minRun || text == "" {
		return text
	}
	text = strings.ReplaceAll(text, secret, Marker)
	if q := url.QueryEscape(secret); q != secret {
		text = strings.ReplaceAll(text, q, Marker)
	}
	var b strings.Builder
	start, changed := 0, false
	flush := func(end int) {
		w := text[start:end]
		if w != Marker && leaks(w, secret) {
			b.WriteString(Marker)
			changed = true
		} else {
			b.WriteString(w)
		}
	}
	for i := 0; i < len(text); i++ {
		if isSep(text[i]) {
			flush(i)
			b.WriteByte(text[i])
			start = i + 1
		}
	}
	flush(len(text))
	if !changed {
		return text
	}
	return b.String()
}

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ',', ';', '(', ')', '<', '>', '=', '&', '?':
		return true
	}
	return false
}

// leaks reports whether word gives away part of secret.
func leaks(word, secret string) bool {
	if len(word) < 4 {
		return false
	}
	masked := strings.ContainsAny(word, "*•") || strings.Contains(word, "…") || strings.Contains(word, "...")
	if masked && (strings.HasPrefix(word, secret[:4]) || strings.HasSuffix(word, secret[len(secret)-4:])) {
		return true
	}
	if len(word) < minRun {
		return false
	}
	// Any run of minRun characters of the word that occurs in the secret.
	for i := 0; i+minRun <= len(word); i++ {
		if strings.Contains(secret, word[i:i+minRun]) {
			return true
		}
	}
	return false
}
