// Package fuse is the fusion plugin's logic (spec 2.3, plugin id fusion):
// a panel of models answers the conversation in parallel, a judge compares
// their answers and returns a JSON analysis validated against a schema, and
// the judge model writes the final answer from that analysis. Everything
// goes through the host's chat sub-requests (abi chat_reserve, chat_batch),
// so routing, holds, billing and the server-tool loop are the host's; the
// module decides what to ask and what to answer. It builds for any
// platform: the module's main (wasip1) gives it the host functions, the
// tests a fake host.
package fuse

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Defaults of the options and settings (docs/plugins.md, "fusion").
const (
	DefaultMaxToolCalls = 8
	MaxPanel            = 8
	// DefaultPanelTokens bounds each panel answer (and each of its
	// server-tool turns), DefaultJudgeTokens the analysis and
	// DefaultFinalTokens the final answer: the hold is computed from them.
	DefaultPanelTokens = 4096
	DefaultJudgeTokens = 2048
	DefaultFinalTokens = 4096
	// DefaultToolResultTokens is what one server-tool result is assumed to
	// add to a panel member's prompt, for the hold (web_fetch's default
	// max_content_tokens is of that order).
	DefaultToolResultTokens = 4000
)

// Options are what one fusion runs with, after the request's plugin item,
// its preset and the operator's settings were merged (explicit fields
// win, then the preset, then the settings).
type Options struct {
	Panel        []string          // analysis_models
	Judge        string            // model
	Preset       string            // the preset used, if any
	Tools        []json.RawMessage // the server tools each panel member may call ([] none)
	MaxToolCalls int
	PanelTokens  int
	JudgeTokens  int
	FinalTokens  int
	ToolTokens   int
}

// Resolve merges config (the request's plugins[] item, validated by the
// host: host/validate/plugins.go) with settings (module_settings.fusion).
// A fusion without a panel from either is the operator's to fix, and the
// message says how.
func Resolve(config, settings gjson.Result) (*Options, error) {
	o := &Options{
		MaxToolCalls: DefaultMaxToolCalls,
		PanelTokens:  intOr(settings.Get("max_tokens"), DefaultPanelTokens),
		JudgeTokens:  intOr(settings.Get("judge_max_tokens"), DefaultJudgeTokens),
		FinalTokens:  intOr(settings.Get("final_max_tokens"), DefaultFinalTokens),
		ToolTokens:   intOr(settings.Get("tool_result_tokens"), DefaultToolResultTokens),
	}
	o.Panel = strs(settings.Get("panel"))
	o.Judge = settings.Get("judge").Str
	if p := config.Get("preset").Str; p != "" {
		pr := settings.Get("presets." + gjson.Escape(p))
		if !pr.IsObject() {
			return nil, fmt.Errorf("preset %q is not configured on this gateway (module_settings.fusion.presets)", p)
		}
		o.Preset = p
		if m := strs(pr.Get("analysis_models")); len(m) > 0 {
			o.Panel = m
			o.Judge = "" // the preset's judge, or its panel's first
		}
		if j := pr.Get("model").Str; j != "" {
			o.Judge = j
		}
	}
	if m := strs(config.Get("analysis_models")); len(m) > 0 {
		o.Panel = m
		if !config.Get("model").Exists() && o.Preset == "" {
			o.Judge = ""
		}
	}
	if j := config.Get("model").Str; j != "" {
		o.Judge = j
	}
	switch {
	case len(o.Panel) == 0:
		return nil, fmt.Errorf("no analysis_models: name them in the plugin item, or configure module_settings.fusion.panel")
	case len(o.Panel) > MaxPanel:
		return nil, fmt.Errorf("analysis_models has %d models; at most %d", len(o.Panel), MaxPanel)
	}
	if o.Judge == "" {
		o.Judge = o.Panel[0]
	}
	if n := config.Get("max_tool_calls"); n.Exists() {
		o.MaxToolCalls = int(n.Int())
	}
	if t := config.Get("tools"); t.Exists() {
		o.Tools = []json.RawMessage{}
		t.ForEach(func(_, v gjson.Result) bool {
			o.Tools = append(o.Tools, json.RawMessage(v.Raw))
			return true
		})
	} else {
		o.Tools = []json.RawMessage{json.RawMessage(`{"type":"service:web_search"}`), json.RawMessage(`{"type":"service:web_fetch"}`)}
		if d := settings.Get("tools"); d.IsArray() {
			o.Tools = []json.RawMessage{}
			d.ForEach(func(_, v gjson.Result) bool {
				o.Tools = append(o.Tools, json.RawMessage(v.Raw))
				return true
			})
		}
	}
	return o, nil
}

func intOr(r gjson.Result, def int) int {
	if r.Exists() && r.Int() > 0 {
		return int(r.Int())
	}
	return def
}

func strs(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool {
		if s := strings.TrimSpace(v.Str); s != "" {
			out = append(out, s)
		}
		return true
	})
	return out
}
