//go:build !wasip1

package cache_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/tidwall/sjson"
)

// embedFake is an OpenAI embeddings upstream on loopback: it answers POST
// …/embeddings in the shape of testdata/embeddings-response.json (OpenAI's
// API reference, see testdata/README.md) with the bag-of-concepts vectors
// described there.
type embedFake struct {
	srv   *httptest.Server
	calls atomic.Int64
}

const embedDims = 256

// concepts maps content words to their concept's dimension; synonyms
// share one.
var concepts = map[string]int{
	"capital": 0, "france": 1, "french": 1, "italy": 2, "italian": 2,
	"population": 3, "people": 3, "inhabitants": 3, "weather": 4, "germany": 5,
}

var stopWords = map[string]bool{
	"what": true, "what's": true, "whats": true, "is": true, "the": true, "of": true, "a": true, "an": true,
	"tell": true, "me": true, "about": true, "could": true, "you": true, "which": true, "in": true, "do": true, "know": true,
}

func fakeEmbedding(text string) []float64 {
	v := make([]float64, embedDims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	for _, w := range words {
		switch d, ok := concepts[w]; {
		case ok:
			v[d]++
		case stopWords[w]:
		default:
			// SHA-256, not FNV: FNV's buckets of words that differ in
			// one letter collide together.
			h := sha256.Sum256([]byte(w))
			v[16+int(binary.BigEndian.Uint32(h[:])%(embedDims-16))] += 0.2
		}
	}
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	if ss > 0 {
		for i := range v {
			v[i] /= math.Sqrt(ss)
		}
	}
	return v
}

func startEmbedFake() (*embedFake, error) {
	fixture, err := os.ReadFile("testdata/embeddings-response.json")
	if err != nil {
		return nil, err
	}
	f := &embedFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/embeddings") {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		f.calls.Add(1)
		var req struct {
			Model string          `json:"model"`
			Input json.RawMessage `json:"input"`
		}
		body, _ := io.ReadAll(r.Body)
		var input string
		if json.Unmarshal(body, &req) != nil || json.Unmarshal(req.Input, &input) != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"'input' must be a string here","type":"invalid_request_error","param":"input","code":null}}`))
			return
		}
		out, _ := sjson.SetBytes(fixture, "data.0.embedding", fakeEmbedding(input))
		out, _ = sjson.SetBytes(out, "model", req.Model)
		n := len(strings.Fields(input)) + 1
		out, _ = sjson.SetBytes(out, "usage.prompt_tokens", n)
		out, _ = sjson.SetBytes(out, "usage.total_tokens", n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	return f, nil
}
