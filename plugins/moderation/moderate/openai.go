package moderate

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
)

// OpenAISettings configure the openai engine: OpenAI's Moderation API
// (POST /v1/moderations). The key is never in the module: the request
// carries the placeholder ${secret:NAME}, which the host substitutes for
// destinations in the manifest's grants.http_domains when NAME is in its
// grants.secrets.
type OpenAISettings struct {
	URL    string `json:"url"`    // default https://api.openai.com/v1/moderations
	Model  string `json:"model"`  // default omni-moderation-latest
	Secret string `json:"secret"` // default OPENAI_API_KEY
}

// OpenAIRequest builds the Moderation API call for texts: one input item
// per text, so a result names the text it is about.
func OpenAIRequest(s *OpenAISettings, texts []string) (url, headers string, body []byte) {
	url, model, secret := s.URL, s.Model, s.Secret
	if url == "" {
		url = "https://api.openai.com/v1/moderations"
	}
	if model == "" {
		model = "omni-moderation-latest"
	}
	if secret == "" {
		secret = "OPENAI_API_KEY"
	}
	headers = "Authorization: Bearer ${secret:" + secret + "}\nContent-Type: application/json"
	body, _ = json.Marshal(map[string]any{"model": model, "input": texts})
	return url, headers, body
}

// ParseOpenAI reads a Moderation API response: for each of n inputs, the
// categories it was flagged for (sorted), as findings without a span.
func ParseOpenAI(status int, body []byte, n int) ([][]Finding, error) {
	if status != 200 {
		msg := gjson.GetBytes(body, "error.message").Str
		if msg == "" {
			msg = string(body)
			if len(msg) > 200 {
				msg = msg[:200]
			}
		}
		return nil, errorf("the Moderation API answered " + strconv.Itoa(status) + ": " + msg)
	}
	results := gjson.GetBytes(body, "results")
	if !results.IsArray() || len(results.Array()) != n {
		return nil, errorf("the Moderation API answered " + strconv.Itoa(len(results.Array())) + " results for " + strconv.Itoa(n) + " inputs")
	}
	out := make([][]Finding, n)
	for i, r := range results.Array() {
		if !r.Get("flagged").Bool() {
			continue
		}
		var cats []string
		r.Get("categories").ForEach(func(k, v gjson.Result) bool {
			if v.Bool() {
				cats = append(cats, k.Str)
			}
			return true
		})
		sort.Strings(cats)
		if len(cats) == 0 {
			cats = []string{"flagged"}
		}
		for _, c := range cats {
			out[i] = append(out[i], Finding{Category: c, Pattern: c})
		}
	}
	return out, nil
}

func runOpenAI(h Host, s *OpenAISettings, texts []text) ([][]Finding, error) {
	if h.HTTP == nil {
		return nil, errorf("outbound HTTP is not available to this build")
	}
	if len(texts) == 0 {
		return nil, nil
	}
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = t.s
	}
	url, headers, body := OpenAIRequest(s, in)
	status, resp, err := h.HTTP("POST", url, headers, body)
	if err != nil {
		return nil, err
	}
	return ParseOpenAI(status, resp, len(texts))
}

type errorString string

func (e errorString) Error() string { return string(e) }

func errorf(s string) error { return errorString(s) }
