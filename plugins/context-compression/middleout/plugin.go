package middleout

import (
	"encoding/json"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

// Engine is the only engine: the option's one allowed value.
const Engine = "middle-out"

// Module is the context-compression module's hook over the host's
// tokenizer.
type Module struct {
	// Count counts text with the host's tokenizer for model
	// (sdk.CountTokens in the module).
	Count func(model, text string) (int, error)
}

// PreRequest compresses the request when it does not fit the largest
// context the host says it may be routed to (ctx.context), and reports
// what it did as the pipeline stage.
func (m *Module) PreRequest(in *sdk.In, out *sdk.Out) error {
	ctx, body := in.Field(0), in.Field(1)
	w := WindowOf(sdk.Get(ctx, "context"))
	model := sdk.Get(ctx, "model").Str
	data := map[string]any{"engine": Engine, "input_type": "messages"}
	if w.MaxContext <= 0 {
		// A host that does not say (or a model without a known context):
		// nothing to fit to.
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(stage("context length unknown: left unchanged", data))
		return nil
	}
	o, err := Compress(body, w, func(s string) (int, error) { return m.Count(model, s) })
	if err != nil {
		return err // the host's tokenizer failed: a 502 naming the module
	}
	data["context_length"] = o.Context
	data["reserved_output"] = o.Reserved
	data["original_count"] = o.Before.Messages
	data["compressed_count"] = o.After.Messages
	if o.Counted {
		data["original_tokens"] = o.Before.Tokens
		data["compressed_tokens"] = o.After.Tokens
	} else {
		// Not tokenized: its size proves it fits.
		data["tokens_at_most"] = o.Before.Tokens
	}
	data["dropped"] = o.Dropped
	data["truncated"] = o.Truncated
	if w.MaxMessages > 0 {
		data["max_messages"] = w.MaxMessages
	}
	if !o.Fits {
		out.FieldString(abi.ActionBlock)
		b, _ := json.Marshal(map[string]any{
			"code": 400,
			"message": "context-compression: the prompt cannot be made to fit a context of " + strconv.Itoa(o.Context) +
				" tokens with " + strconv.Itoa(o.Reserved) + " reserved for the output: the system prompt, the last user turn and the tool definitions it keeps still need " +
				strconv.Itoa(o.After.Tokens) + " tokens" + messagesNote(w, o) + "; shorten them, lower max_tokens, or choose a model with a larger context",
			"metadata": data,
		})
		out.Field(b)
		out.Field(stage("middle-out: cannot fit", data))
		return nil
	}
	out.FieldString(abi.ActionContinue)
	if o.Body == nil {
		out.Field(nil)
		what := strconv.Itoa(o.Before.Tokens) + " tokens fit"
		if !o.Counted {
			what = "at most " + what
		}
		out.Field(stage("middle-out: "+what+" the context of "+strconv.Itoa(o.Context)+": left unchanged", data))
		return nil
	}
	out.Field(o.Body)
	out.Field(stage("middle-out: "+strconv.Itoa(o.Before.Messages)+" → "+strconv.Itoa(o.After.Messages)+" messages, "+
		strconv.Itoa(o.Before.Tokens)+" → "+strconv.Itoa(o.After.Tokens)+" tokens to fit "+strconv.Itoa(o.Context), data))
	return nil
}

func messagesNote(w Window, o Outcome) string {
	if w.MaxMessages > 0 && o.After.Messages > w.MaxMessages {
		return " in " + strconv.Itoa(o.After.Messages) + " messages (the provider allows " + strconv.Itoa(w.MaxMessages) + ")"
	}
	return ""
}

func stage(summary string, data map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"type": "plugin", "summary": summary, "data": data})
	return b
}
