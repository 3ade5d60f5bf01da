package websearch

import (
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/sdk"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\ncr\r\x01\x1f", "ünï — 日本", `"`, "\\"} {
		got := string(appendString([]byte("x"), s))
		if got != "x"+sdk.Quote(s) {
			t.Fatalf("%q: %s, want %s", s, got, sdk.Quote(s))
		}
		var back string
		if err := json.Unmarshal([]byte(got[1:]), &back); err != nil || back != s {
			t.Fatalf("%q round trip: %q %v", s, back, err)
		}
	}
}
