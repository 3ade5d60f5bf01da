package dispatch

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestJoinEmbeddings: the parts' answers become one list in input order,
// re-indexed, with the usage summed only when every part reports it.
func TestJoinEmbeddings(t *testing.T) {
	part := func(vec, usage string) []byte {
		b := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":` + vec + `}],"model":"amazon/titan","provider":"bedrock"`
		if usage != "" {
			b += `,"usage":` + usage
		}
		return []byte(b + "}")
	}
	cases := []struct {
		name  string
		parts [][]byte
		want  map[string]string // gjson path → value; "" for absent
	}{
		{"usage summed", [][]byte{part("[1]", `{"prompt_tokens":2,"total_tokens":2}`), part("[2]", `{"prompt_tokens":3,"total_tokens":3}`), part("[3]", `{"prompt_tokens":4,"total_tokens":4}`)},
			map[string]string{"data.#": "3", "data.2.index": "2", "data.2.embedding.0": "3", "data.1.embedding.0": "2", "usage.prompt_tokens": "9", "usage.total_tokens": "9", "model": "amazon/titan", "provider": "bedrock"}},
		{"a part without usage: none", [][]byte{part("[1]", `{"prompt_tokens":2,"total_tokens":2}`), part("[2]", "")},
			map[string]string{"data.#": "2", "data.1.index": "1", "usage": ""}},
		{"base64 entries", [][]byte{part(`"AACAPw=="`, `{"prompt_tokens":1,"total_tokens":1}`), part(`"AAAAQA=="`, `{"prompt_tokens":1,"total_tokens":1}`)},
			map[string]string{"data.1.embedding": "AAAAQA==", "usage.prompt_tokens": "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := joinEmbeddings(tc.parts)
			if !gjson.ValidBytes(out) {
				t.Fatalf("not JSON: %s", out)
			}
			for path, want := range tc.want {
				got := gjson.GetBytes(out, path)
				if (want == "" && got.Exists()) || (want != "" && got.String() != want) {
					t.Errorf("%s = %s, want %q\n%s", path, got.Raw, want, out)
				}
			}
		})
	}
}
