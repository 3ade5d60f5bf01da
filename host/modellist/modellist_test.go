package modellist

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/catalog"
)

// Prices are exact decimals: per token from per million without a float
// division.
func TestPerToken(t *testing.T) {
	for perMillion, want := range map[float64]string{0: "0", 0.1: "0.0000001", 2.5: "0.0000025", 15: "0.000015", 1e6: "1"} {
		if got := perToken(perMillion); got != want {
			t.Errorf("perToken(%v) = %s, want %s", perMillion, got, want)
		}
	}
}

// The listing's query filters.
func TestFilter(t *testing.T) {
	in := []Entry{
		{ID: "a/coder", Name: "Coder", Architecture: newArchitecture(catalog.KindChat, []string{"text"}, "GPT"),
			SupportedParameters: []string{"tools", "seed"}, scores: map[string]catalog.Score{"coding": {Value: 0.5}}},
		{ID: "b/vision", Name: "Vision", Architecture: newArchitecture(catalog.KindChat, []string{"text", "image"}, "Other"),
			SupportedParameters: []string{"tools"}, scores: map[string]catalog.Score{"coding": {Value: 0.9}}},
		{ID: "c/embed", Name: "Embed", Architecture: newArchitecture(catalog.KindEmbedding, nil, "Other")},
	}
	cases := []struct {
		query map[string]string
		want  string
		err   string
	}{
		{map[string]string{}, "a/coder,b/vision,c/embed", ""},
		{map[string]string{"supported_parameters": "tools,seed"}, "a/coder", ""},
		{map[string]string{"input_modalities": "image"}, "b/vision", ""},
		{map[string]string{"output_modalities": "embeddings"}, "c/embed", ""},
		{map[string]string{"q": "VIS"}, "b/vision", ""},
		{map[string]string{"category": "programming"}, "b/vision,a/coder", ""},
		{map[string]string{"category": "cooking"}, "", `category: unknown category "cooking"`},
	}
	for _, tc := range cases {
		out, aerr := Filter(func(n string) string { return tc.query[n] }, in)
		if tc.err != "" {
			if aerr == nil || !strings.Contains(aerr.Message, tc.err) {
				t.Errorf("%v: error %v, want %q", tc.query, aerr, tc.err)
			}
			continue
		}
		var ids []string
		for _, e := range out {
			ids = append(ids, e.ID)
		}
		if got := strings.Join(ids, ","); aerr != nil || got != tc.want {
			t.Errorf("%v: %s %v, want %s", tc.query, got, aerr, tc.want)
		}
	}
}
