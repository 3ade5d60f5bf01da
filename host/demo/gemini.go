package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/host/jsonstr"
)

// Gemini is a fake of Google's Gemini API in its wire format:
// models/{model}:generateContent, :streamGenerateContent?alt=sse (events
// separated by CRLF blank lines) and :batchEmbedContents, with Google's
// error bodies. Like Server it echoes the last user text and takes Faults;
// with tools offered and "weather" in the last user text it calls the first
// function.
type Gemini struct{ Server }

// NewGemini returns a healthy fake.
func NewGemini() *Gemini { return &Gemini{} }

func geminiError(w http.ResponseWriter, status int, msg string) {
	s := map[int]string{400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
	if s == "" {
		s = "INTERNAL"
	}
	b, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%s,"status":%s}}`, status, b, jsonstr.Quote(s))
}

type geminiPart struct {
	Text             string          `json:"text"`
	InlineData       json.RawMessage `json:"inlineData"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse *struct {
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

func (g *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, f, ok := g.admit(w, r, func(w http.ResponseWriter, status int) {
		geminiError(w, status, fmt.Sprintf("demo fault: status %d", status))
	})
	if !ok {
		return
	}
	// The Gemini API takes a key; Vertex AI's form of it (the same paths
	// under /projects/…/publishers/google) an OAuth bearer token.
	if r.Header.Get("x-goog-api-key") == "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		geminiError(w, http.StatusForbidden, "Method doesn't allow unregistered callers. Please use API Key.")
		return
	}
	_, rest, found := strings.Cut(r.URL.Path, "/models/")
	model, method, _ := strings.Cut(rest, ":")
	if !found || r.Method != http.MethodPost {
		geminiError(w, http.StatusNotFound, "not found")
		return
	}
	switch method {
	case "batchEmbedContents":
		g.embed(w, body)
	case "generateContent", "streamGenerateContent":
		g.generate(w, r, body, f, model, method == "streamGenerateContent")
	default:
		geminiError(w, http.StatusNotFound, "unknown method "+method)
	}
}

func (g *Gemini) embed(w http.ResponseWriter, body []byte) {
	var req struct {
		Requests []struct {
			Content struct {
				Parts []geminiPart `json:"parts"`
			} `json:"content"`
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"requests"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Requests) == 0 {
		geminiError(w, http.StatusBadRequest, "requests: at least one request is required")
		return
	}
	var out []string
	for _, rq := range req.Requests {
		var key strings.Builder
		for _, p := range rq.Content.Parts {
			key.WriteString(p.Text)
			key.Write(p.InlineData)
		}
		dim := rq.OutputDimensionality
		if dim == 0 {
			dim = 16
		}
		v, _ := json.Marshal(Vector(key.String(), dim))
		out = append(out, `{"values":`+string(v)+`}`)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"embeddings":[%s]}`, strings.Join(out, ","))
}

func (g *Gemini) generate(w http.ResponseWriter, r *http.Request, body []byte, f Faults, model string, stream bool) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Contents) == 0 {
		geminiError(w, http.StatusBadRequest, "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	conv := req.conversation()
	offered, choice := req.toolChoice()
	turn := plan(offered, choice, conv.lastUser, conv.results, "This is the Switchyard demo of Gemini (offline).")
	reply := plannedReply(f, model, conv.images, turn)
	if reply == "" {
		reply = "This is the Switchyard demo of Gemini (offline). You said: " + conv.lastUser
	}
	toks := strings.SplitAfter(reply, " ")
	call, callsOnly := req.functionCalls(turn, conv.lastUser)
	if callsOnly {
		toks = []string{""}
	}
	usage := fmt.Sprintf(`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d,"cachedContentTokenCount":1}`, conv.prompt, len(toks), conv.prompt+len(toks))
	head := fmt.Sprintf(`"modelVersion":%s,"responseId":"resp_demo%d"`, jsonstr.Quote(model), time.Now().UnixNano())
	if !stream {
		t, _ := json.Marshal(strings.Join(toks, ""))
		parts := `{"text":` + string(t) + `}`
		if call != "" {
			parts += "," + call
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"candidates":[{"content":{"parts":[%s],"role":"model"},"finishReason":"STOP","index":0}],%s,%s}`, parts, usage, head)
		return
	}
	g.stream(w, r, f, toks, call, usage, head)
}

// geminiRequest is what the fake reads of a generateContent request.
type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

// geminiConversation is what the fake answers from: the last user text,
// the function responses after it, the last user content's images, and the
// prompt tokens it counts.
type geminiConversation struct {
	lastUser string
	prompt   int
	results  []string // function responses after the last user text
	images   []string // the last user content's inline images
}

// conversation reads the request's contents.
func (req *geminiRequest) conversation() geminiConversation {
	var cv geminiConversation
	for _, c := range req.Contents {
		if c.Role == "user" {
			cv.images = geminiImages(c.Parts) // vision.go
			cv.prompt += 258 * len(cv.images) // Gemini's count for a small image
		}
		for _, p := range c.Parts {
			cv.prompt += words(p.Text) + 1
			if c.Role == "user" && p.Text != "" {
				cv.lastUser, cv.results = p.Text, nil
			}
			if p.FunctionResponse != nil {
				cv.results = append(cv.results, string(p.FunctionResponse.Response))
				cv.prompt += words(string(p.FunctionResponse.Response))
			}
		}
	}
	return cv
}

// toolChoice is the functions offered and what toolConfig asks of them, in
// the terms plan takes ("none", "required", or the one function allowed).
func (req *geminiRequest) toolChoice() (offered []string, choice string) {
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			offered = append(offered, d.Name)
		}
	}
	switch fc := req.ToolConfig.FunctionCallingConfig; {
	case fc.Mode == "NONE":
		choice = "none"
	case fc.Mode == "ANY" && len(fc.AllowedFunctionNames) == 1:
		choice = fc.AllowedFunctionNames[0]
	case fc.Mode == "ANY":
		choice = "required"
	}
	return offered, choice
}

// functionCalls is the functionCall parts of the answer, "" for none: the
// first function's when the last user text mentions "weather", or the
// agent turn's calls — then the answer has those parts only (callsOnly).
func (req *geminiRequest) functionCalls(turn agentTurn, lastUser string) (call string, callsOnly bool) {
	if len(req.Tools) > 0 && len(req.Tools[0].FunctionDeclarations) > 0 && strings.Contains(lastUser, "weather") {
		return `{"functionCall":{"name":"` + req.Tools[0].FunctionDeclarations[0].Name + `","args":{"city":"Oslo"}}}`, false
	}
	if len(turn.calls) == 0 {
		return "", false
	}
	// Gemini answers a tool turn with functionCall parts only (and
	// finishReason STOP, as it does).
	var calls []string
	for _, c := range turn.calls {
		calls = append(calls, `{"functionCall":{"name":`+jsonstr.Quote(c.Name)+`,"args":`+c.Args+`}}`)
	}
	return strings.Join(calls, ","), true
}

// stream answers with one SSE event a token (separated by CRLF blank
// lines); the last carries the function calls, finishReason and usage.
// It is cut after f.CutAfter events when that is set.
func (g *Gemini) stream(w http.ResponseWriter, r *http.Request, f Faults, toks []string, call, usage, head string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, tok := range toks {
		if f.CutAfter > 0 && i >= f.CutAfter {
			return
		}
		t, _ := json.Marshal(tok)
		parts := `{"text":` + string(t) + `}`
		last := i == len(toks)-1
		if last && call != "" {
			parts += "," + call
		}
		extra := ""
		if last {
			extra = `,"finishReason":"STOP"`
		}
		chunk := fmt.Sprintf(`{"candidates":[{"content":{"parts":[%s],"role":"model"}%s,"index":0}]`, parts, extra)
		if last {
			chunk += "," + usage
		}
		if !g.emit(w, r, "data: "+chunk+","+head+"}\r\n\r\n", f.ChunkDelay) {
			return
		}
	}
}
