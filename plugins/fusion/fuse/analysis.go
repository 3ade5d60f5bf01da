package fuse

import (
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// AnalysisSchema is the JSON Schema the judge's analysis must satisfy. The
// judge is asked for it with response_format json_schema (strict), and the
// module validates what comes back: a model or endpoint that ignores
// structured outputs is caught here, not in the final answer.
const AnalysisSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["consensus", "contradictions", "unique_points", "gaps"],
  "properties": {
    "consensus": {"type": "array", "items": {"type": "string"},
      "description": "points most answers agree on"},
    "contradictions": {"type": "array", "items": {
      "type": "object", "additionalProperties": false, "required": ["topic", "positions"],
      "properties": {"topic": {"type": "string"}, "positions": {"type": "array", "items": {"type": "string"}}}},
      "description": "where answers disagree: the topic and each position, naming the model"},
    "unique_points": {"type": "array", "items": {
      "type": "object", "additionalProperties": false, "required": ["model", "point"],
      "properties": {"model": {"type": "string"}, "point": {"type": "string"}}},
      "description": "a point only one answer made"},
    "gaps": {"type": "array", "items": {"type": "string"},
      "description": "what no answer covered or verified"}
  }
}`

var schema = mustCompile(AnalysisSchema)

func mustCompile(doc string) *jsonschema.Schema {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("analysis.json", v); err != nil {
		panic(err)
	}
	return c.MustCompile("analysis.json")
}

// Failure reasons (error.metadata.reason), the names OpenRouter's fusion
// uses.
const (
	ReasonAllPanelsFailed     = "all_panels_failed"
	ReasonJudgeNotJSON        = "judge_not_valid_json"
	ReasonJudgeSchemaMismatch = "judge_schema_mismatch"
	ReasonJudgeUpstream       = "judge_upstream_error"
	ReasonJudgeEmpty          = "judge_empty_completion"
	ReasonFinalUpstream       = "final_upstream_error"
	ReasonInsufficientCredits = "insufficient_credits"
	ReasonCancelled           = "cancelled"
	ReasonInvalidModel        = "invalid_model"
	ReasonNested              = "nested_fusion"
	ReasonConfig              = "not_configured"
)

// parseAnalysis reads the judge's answer: a JSON object satisfying
// AnalysisSchema. A model that wraps it in a Markdown code fence is
// forgiven the fence, nothing else.
func parseAnalysis(text string) (any, string, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```json")
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(t))
	if err != nil {
		return nil, ReasonJudgeNotJSON, fmt.Errorf("the judge's analysis is not valid JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return nil, ReasonJudgeSchemaMismatch, fmt.Errorf("the judge's analysis does not match the schema: %s", deepest(err))
	}
	return v, "", nil
}

// deepest is the innermost cause of a validation error, with its location.
func deepest(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/" + strings.Join(ve.InstanceLocation, "/")
	msg := ve.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "at " + loc + ": " + msg
}
