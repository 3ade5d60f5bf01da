package demo

import (
	"encoding/json"
	"strings"
)

// The demo model's tool use, shared by the three fakes (each speaks it in
// its own wire format), so the server-tool loop can be tried offline and
// proven through every adapter.
//
// With tools offered, on a turn that follows the user's message:
//   - "call:NAME" words in the user's message call tool NAME, once per word
//     (several words: parallel calls in one turn); "tz:ZONE" adds
//     {"timezone": ZONE} to the arguments, "args:{…}" (JSON without
//     spaces) gives them all; the word "again" makes the model
//     call them again after every tool result (a model that never stops);
//   - without such words: a question about the time or date calls
//     "datetime", one asking to search calls "web_search" with the message
//     as the query, one asking to fetch a URL calls "web_fetch";
//   - a tool_choice naming a function (or "required") calls it (the first
//     tool).
//
// After tool results it answers in prose that quotes them. tool_choice
// "none" never calls a tool.

// toolCall is one call the demo model makes.
type toolCall struct {
	ID, Name string
	Args     string // JSON object
}

// agentTurn is what the model does on a turn: call tools, or answer.
type agentTurn struct {
	calls []toolCall
	reply string // "" when calls are made, or the default reply applies
}

// plan decides a turn. offered are the tool names in order; choice is
// "none", "auto", "required", a function name, or ""; lastUser is the text
// of the last user message; results are the tool results that came after
// it (none when the user spoke last).
func plan(offered []string, choice, lastUser string, results []string, prefix string) agentTurn {
	var t agentTurn
	if len(results) > 0 {
		t.reply = prefix + " Tool results: " + strings.Join(results, " | ")
	}
	if len(offered) == 0 || choice == "none" {
		return t
	}
	has := func(name string) bool {
		for _, o := range offered {
			if o == name {
				return true
			}
		}
		return false
	}
	words := strings.Fields(lastUser)
	var named []string
	tz, again, given := "", false, ""
	for _, w := range words {
		if strings.HasPrefix(w, "args:") && json.Valid([]byte(w[5:])) {
			given = w[5:]
			continue
		}
		w = strings.Trim(w, ".,;!?")
		switch {
		case strings.HasPrefix(w, "call:"):
			named = append(named, strings.TrimPrefix(w, "call:"))
		case strings.HasPrefix(w, "tz:"):
			tz = strings.TrimPrefix(w, "tz:")
		case w == "again":
			again = true
		}
	}
	if len(results) > 0 && !again {
		return t
	}
	lower := strings.ToLower(lastUser)
	if len(named) == 0 && len(results) == 0 {
		switch {
		case choice != "" && choice != "auto" && choice != "required" && has(choice):
			named = []string{choice}
		case (strings.Contains(lower, "time") || strings.Contains(lower, "date")) && has("datetime"):
			named = []string{"datetime"}
		case strings.Contains(lower, "search") && has("web_search"):
			named = []string{"web_search"}
		case strings.Contains(lower, "fetch") && has("web_fetch"):
			named = []string{"web_fetch"}
		case choice == "required":
			named = []string{offered[0]}
		}
	}
	for i, n := range named {
		args := map[string]any{}
		switch n {
		case "datetime":
			if tz != "" {
				args["timezone"] = tz
			}
		case "web_search":
			args["query"] = lastUser
		case "web_fetch":
			for _, w := range words {
				if strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://") {
					args["url"] = strings.TrimRight(w, ".,;!?")
				}
			}
		}
		b, _ := json.Marshal(args)
		if given != "" {
			b = []byte(given)
		}
		t.calls = append(t.calls, toolCall{ID: "call_demo" + string(rune('a'+i%26)) + itoa(i), Name: n, Args: string(b)})
	}
	if len(t.calls) > 0 {
		t.reply = ""
	}
	return t
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
