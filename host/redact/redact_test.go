package redact

import (
	"strings"
	"testing"
)

func TestSecret(t *testing.T) {
	const key = "sk-proj-Q7fK2mZpL9xW4vB8nR1tY6uH3jC5dE0a"
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"no secret here", "no secret here"},
		{"key " + key + " rejected", "key [redacted] rejected"},
		{"Incorrect API key provided: sk-proj-Q7fK****************************E0a.", "Incorrect API key provided: [redacted]"},
		{"Incorrect API key provided: sk-proj-********************************dE0a", "Incorrect API key provided: [redacted]"},
		{`{"error":"bad key sk-proj-Q7fK2mZp..."}`, `{"error":"bad key [redacted]"}`},
		{"key=sk-proj-Q7fK2mZpL9xW&x=1", "key=[redacted]&x=1"},
		{"GET /v1/models?key=sk-proj-Q7fK2mZpL9xW4vB8nR1tY6uH3jC5dE0a", "GET /v1/models?key=[redacted]"},
		// Ordinary words sharing a few characters are kept.
		{"sk-proj is the prefix of project keys", "sk-proj is the prefix of project keys"},
		{"model gpt-4o-mini not found", "model gpt-4o-mini not found"},
	} {
		got := Secret(tc.in, key)
		if got != tc.want {
			t.Errorf("Secret(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, key[:12]) {
			t.Errorf("Secret(%q) keeps a 12-character prefix: %q", tc.in, got)
		}
	}
	if got := Secret("short", "abc"); got != "short" {
		t.Errorf("short secret: %q", got)
	}
}

func FuzzSecret(f *testing.F) {
	f.Add("Incorrect API key provided: sk-abcdefgh****wxyz", "sk-abcdefghijklmnopqrstuvwxyz")
	f.Fuzz(func(t *testing.T, text, secret string) {
		out := Secret(text, secret)
		if len(secret) >= minRun && strings.Contains(out, secret) {
			t.Fatalf("secret survived: %q", out)
		}
	})
}
