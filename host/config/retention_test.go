package config

import (
	"strings"
	"testing"
	"time"
)

// retention.generations takes days or Go durations, keeps records forever
// when absent, and refuses what would delete records by mistake.
func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
		err  string // part of the error; "" = accepted
	}{
		{"listen: 127.0.0.1:1", 0, ""},
		{"retention: {generations: 90d}", 90 * 24 * time.Hour, ""},
		{"retention: {generations: 2160h}", 2160 * time.Hour, ""},
		{"retention: {generations: 1h}", time.Hour, ""},
		{"retention: {generations: 0}", 0, ""},
		{"retention: {generations: 1s}", 0, "1s is too short: keep generation records at least 1h"},
		{"retention: {generations: 59m}", 0, "at least 1h (e.g. 90d), or 0 to keep them forever"},
		{"retention: {generations: -1d}", 0, "-1d is negative"},
		{"retention: {generations: 1.5d}", 0, "want a whole number of days (90d)"},
		{"retention: {generations: soon}", 0, `duration "soon"`},
		{"retention: {logs: 30d}", 0, "field logs not found"},
	} {
		c, err := Parse([]byte(tc.yaml))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.err == "" && time.Duration(c.Retention.Generations) != tc.want:
			t.Errorf("%q: retention %v, want %v", tc.yaml, time.Duration(c.Retention.Generations), tc.want)
		}
	}
}

// retention.responses keeps stored responses 30 days when absent (as
// OpenAI does), forever at 0, and refuses what would delete them by
// mistake.
func TestResponsesRetention(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
		err  string
	}{
		{"listen: 127.0.0.1:1", 30 * 24 * time.Hour, ""},
		{"retention: {responses: 7d}", 7 * 24 * time.Hour, ""},
		{"retention: {responses: 0}", 0, ""},
		{"retention: {responses: 10m}", 0, "retention.responses: 10m: keep stored responses at least 1h"},
		{"retention: {responses: -1d}", 0, "retention.responses: -1d"},
	} {
		c, err := Parse([]byte(tc.yaml))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.err == "" && c.Retention.ResponsesKeep() != tc.want:
			t.Errorf("%q: kept %v, want %v", tc.yaml, c.Retention.ResponsesKeep(), tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{90 * 24 * time.Hour: "90d", time.Hour: "1h", 36 * time.Hour: "36h", 59 * time.Minute: "59m",
		90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", time.Second: "1s", 0: "0s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
