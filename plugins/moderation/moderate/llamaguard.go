package moderate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// LlamaGuardSettings configure the llama-guard engine: any chat model the
// gateway serves, asked through the chat host function (a sub-request,
// routed and billed like the caller's own) with the Llama Guard 3 prompt.
type LlamaGuardSettings struct {
	Model string `json:"model"` // required
	// Mode "prompt" (default) sends the whole Llama Guard 3 prompt as one
	// user message, for any chat model; "messages" sends the conversation
	// as is, for a server that applies Llama Guard's own chat template.
	Mode string `json:"mode"`
	// Categories limits the policy to these codes (default S1–S14).
	Categories []string `json:"categories"`
}

// LlamaGuardCategories are Llama Guard 3's hazard categories (MLCommons
// taxonomy), as the model card lists them.
var LlamaGuardCategories = []struct{ Code, Name string }{
	{"S1", "Violent Crimes"}, {"S2", "Non-Violent Crimes"}, {"S3", "Sex Crimes"},
	{"S4", "Child Exploitation"}, {"S5", "Defamation"}, {"S6", "Specialized Advice"},
	{"S7", "Privacy"}, {"S8", "Intellectual Property"}, {"S9", "Indiscriminate Weapons"},
	{"S10", "Hate"}, {"S11", "Self-Harm"}, {"S12", "Sexual Content"}, {"S13", "Elections"},
	{"S14", "Code Interpreter Abuse"},
}

// Turn is one conversation turn for Llama Guard: role "User" or "Agent".
type Turn struct{ Role, Text string }

// LlamaGuardPrompt is the Llama Guard 3 prompt (model card, "Prompt
// format") assessing the last User message of turns, without the special
// tokens: the serving side's chat template adds them around a user message.
func LlamaGuardPrompt(turns []Turn, codes []string) string {
	var b strings.Builder
	b.WriteString("Task: Check if there is unsafe content in 'User' messages in conversations according our safety policy with the below categories.\n\n<BEGIN UNSAFE CONTENT CATEGORIES>\n")
	for _, c := range LlamaGuardCategories {
		if len(codes) > 0 && !contains(codes, c.Code) {
			continue
		}
		b.WriteString(c.Code + ": " + c.Name + ".\n")
	}
	b.WriteString("<END UNSAFE CONTENT CATEGORIES>\n\n<BEGIN CONVERSATION>\n\n")
	for _, t := range turns {
		b.WriteString(t.Role + ": " + t.Text + "\n\n")
	}
	b.WriteString("<END CONVERSATION>\n\nProvide your safety assessment for ONLY THE LAST User message in the above conversation:\n - First line must read 'safe' or 'unsafe'.\n - If unsafe, a second line must include a comma-separated list of violated categories.")
	return b.String()
}

// LlamaGuardRequest is the chat request body for the engine.
func LlamaGuardRequest(s *LlamaGuardSettings, turns []Turn) []byte {
	var msgs []map[string]string
	if s.Mode == "messages" {
		for _, t := range turns {
			role := "user"
			if t.Role == "Agent" {
				role = "assistant"
			}
			msgs = append(msgs, map[string]string{"role": role, "content": t.Text})
		}
	} else {
		msgs = []map[string]string{{"role": "user", "content": LlamaGuardPrompt(turns, s.Categories)}}
	}
	b, _ := json.Marshal(map[string]any{"model": s.Model, "messages": msgs, "temperature": 0, "max_tokens": 20, "stream": false})
	return b
}

// ParseLlamaGuard reads the model's answer: "safe", or "unsafe" and a line
// of category codes ("S1,S10").
func ParseLlamaGuard(answer string) (unsafe bool, codes []string, err error) {
	lines := strings.Split(strings.TrimSpace(answer), "\n")
	switch strings.ToLower(strings.TrimSpace(lines[0])) {
	case "safe":
		return false, nil, nil
	case "unsafe":
	default:
		return false, nil, errorf("the model did not answer in Llama Guard's format (safe / unsafe): " + strconv.Quote(Elide(answer, 80)))
	}
	if len(lines) > 1 {
		for _, c := range strings.Split(lines[1], ",") {
			c = strings.ToUpper(strings.TrimSpace(c))
			if c != "" {
				codes = append(codes, c)
			}
		}
	}
	if len(codes) == 0 {
		codes = []string{"unsafe"}
	}
	return true, codes, nil
}

// CategoryName is the name of Llama Guard code c ("S1" → "Violent Crimes").
func CategoryName(c string) string {
	for _, x := range LlamaGuardCategories {
		if x.Code == c {
			return x.Name
		}
	}
	return c
}

// runLlamaGuard asks the model about the conversation; an unsafe verdict
// is a finding on the last user text (what the prompt asks about).
func runLlamaGuard(h Host, s *LlamaGuardSettings, texts []text) ([][]Finding, error) {
	if s.Model == "" {
		return nil, errorf("llama_guard.model is not set in the operator's settings")
	}
	if h.Chat == nil {
		return nil, errorf("the chat host function is not available to this build")
	}
	var turns []Turn
	last := -1
	for i, t := range texts {
		switch t.role {
		case "user":
			turns = append(turns, Turn{"User", t.s})
			last = i
		case "assistant":
			turns = append(turns, Turn{"Agent", t.s})
		}
	}
	out := make([][]Finding, len(texts))
	if last < 0 {
		return out, nil
	}
	status, resp, err := h.Chat(LlamaGuardRequest(s, turns))
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, errorf("the model answered " + strconv.Itoa(status) + ": " + gjson.GetBytes(resp, "error.message").Str)
	}
	unsafe, codes, err := ParseLlamaGuard(gjson.GetBytes(resp, "choices.0.message.content").Str)
	if err != nil || !unsafe {
		return out, err
	}
	for _, c := range codes {
		out[last] = append(out[last], Finding{Category: c, Pattern: c + " " + CategoryName(c)})
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
