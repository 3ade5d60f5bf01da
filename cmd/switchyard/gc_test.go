package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	for _, tc := range []struct {
		name       string
		configured int
		gogc       string
		want       int // the target after tuneGC; 77: left as it was
	}{
		{"GOGC wins over the default", 0, "100", 77},
		{"GOGC wins over the file", 250, "off", 77},
		{"configured", 150, "", 150},
		{"configured off", -1, "", -1},
		{"default: tuned to the small live heap", 0, "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(77)
			stop := tuneGC(tc.configured, func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			defer stop()
			if got := debug.SetGCPercent(77); got != tc.want {
				t.Fatalf("target %d, want %d", got, tc.want)
			}
		})
	}
}
