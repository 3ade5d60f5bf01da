package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// lineBoth formats one record by hand and through the slog handler the
// LogHandler wraps, and reports whether the hand-written path took it.
func lineBoth(t testing.TB, format string, tm time.Time, level slog.Level, msg string, attrs []slog.Attr) (fast, std string, took bool) {
	t.Helper()
	var a, b bytes.Buffer
	took = NewLogHandler(&a, format, slog.LevelDebug).writeLine(tm, level, msg, attrs)
	rec := slog.NewRecord(tm, level, msg, 0)
	rec.AddAttrs(attrs...)
	if err := NewLogHandler(&b, format, slog.LevelDebug).Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String(), took
}

// A request line written by hand is the line slog writes, byte for byte,
// in both formats; what the hand-written path does not take, it leaves
// alone for slog.
func TestRequestLineMatchesSlog(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 11, 24, 21, 30, 5, 123456789, time.UTC),
		time.Date(2026, 11, 24, 21, 30, 5, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100000, time.FixedZone("x", 5*3600+1800)),
		time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("y", -7*3600)),
		time.Now(), // with a monotonic reading
	}
	request := []slog.Attr{slog.String("route", "/api/v1/chat/completions"), slog.Int("status", 200), slog.Int64("latency_ms", 3),
		slog.String("account", "acct_1"), slog.String("key_name", "default"), slog.String("generation_id", "gen-1764012345-AbC"),
		slog.String("model", "openai/gpt-4o-mini"), slog.String("provider", "openai"), slog.String("generation_status", "success"),
		slog.Bool("streamed", false), slog.Int64("prompt_tokens", 12), slog.Int64("completion_tokens", -1),
		slog.String("cost", "0.0000123"), slog.Int("attempts", 1)}
	cases := []struct {
		name  string
		level slog.Level
		attrs []slog.Attr
		took  bool
	}{
		{"request", slog.LevelInfo, request, true},
		{"5xx", slog.LevelWarn, append(append([]slog.Attr{}, request...), slog.String("error", `could not reach provider "alpha": connection refused`)), true},
		{"quoting", slog.LevelInfo, []slog.Attr{slog.String("a", ""), slog.String("b", "x=y"), slog.String("c", `back\slash`), slog.String("d", `"`), slog.String("e", "~!@#$%^&*()_+{}|:<>?`-[];',./"), slog.Bool("f", true)}, true},
		{"no attributes", slog.LevelInfo, nil, true},
		{"unicode", slog.LevelInfo, []slog.Attr{slog.String("model", "modèle")}, false},
		{"newline", slog.LevelInfo, []slog.Attr{slog.String("error", "a\nb")}, false},
		{"delete byte", slog.LevelInfo, []slog.Attr{slog.String("error", "a\x7fb")}, false},
		{"float", slog.LevelInfo, []slog.Attr{slog.Float64("x", 1.5)}, false},
		{"duration", slog.LevelInfo, []slog.Attr{slog.Duration("x", time.Second)}, false},
		{"key with a space", slog.LevelInfo, []slog.Attr{slog.String("a b", "c")}, false},
	}
	for _, format := range []string{"text", "json"} {
		for _, tc := range cases {
			for _, tm := range times {
				fast, std, took := lineBoth(t, format, tm, tc.level, "request", tc.attrs)
				if took != tc.took {
					t.Fatalf("%s %s: hand-written path took it: %v, want %v", format, tc.name, took, tc.took)
				}
				if took && fast != std {
					t.Fatalf("%s %s at %v: wrote\n%q\nslog writes\n%q", format, tc.name, tm, fast, std)
				}
				if !took && fast != "" {
					t.Fatalf("%s %s: declined but wrote %q", format, tc.name, fast)
				}
			}
		}
	}
}

func FuzzRequestLine(f *testing.F) {
	f.Add("openai/gpt-4o-mini", "could not reach provider x: timed out", int64(7), true, int64(1764012345123456789))
	f.Add("", `a"b\c=d`, int64(-1), false, int64(0))
	f.Fuzz(func(t *testing.T, s1, s2 string, n int64, b bool, ns int64) {
		tm := time.Unix(0, ns).UTC()
		if y := tm.Year(); y < 1 || y > 9999 {
			t.Skip()
		}
		attrs := []slog.Attr{slog.String("model", s1), slog.Int64("n", n), slog.Bool("b", b), slog.String("error", s2)}
		for _, format := range []string{"text", "json"} {
			if fast, std, took := lineBoth(t, format, tm, slog.LevelInfo, "request", attrs); took && fast != std {
				t.Fatalf("%s: wrote\n%q\nslog writes\n%q", format, fast, std)
			}
		}
	})
}
