//go:build wasip1

// Command testplugin is a plugin whose behaviour the request chooses
// (config "mode"), so tests can drive every pipeline path through a real
// module: rewrite, respond, block, trap, spin, and chunk editing (shout,
// garble), and hostile ones: remember (leaks the previous prompt its memory
// holds), logflood, and output out of shape — cost (a stage summary whose
// "cost" is config "cost" verbatim; cost_both: from post_response too),
// badbytes (bytes that are not UTF-8 in
// its answer, result, chunks and summary) and badtypes (a content that is
// a number in each).
package main

import (
	"runtime/debug"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func main() {}

func init() {
	sdk.Handle(abi.HookPreRequest, pre)
	sdk.Handle(abi.HookPostResponse, post)
	sdk.Handle(abi.HookPostChunk, chunk)
}

func mode(in *sdk.In) string { return sdk.Get(in.Field(0), "config.mode").Str }

var (
	sink       int
	remembered string
)

func pre(in *sdk.In, out *sdk.Out) error {
	body := in.Field(1)
	switch mode(in) {
	case "rewrite":
		// Prefix the last user message, as a prompt-injection shield might.
		n := len(gjson.GetBytes(body, "messages").Array())
		b, _ := sjson.SetBytes(append([]byte(nil), body...), "messages."+itoa(n-1)+".content", "[checked] "+gjson.GetBytes(body, "messages."+itoa(n-1)+".content").Str)
		out.FieldString(abi.ActionContinue)
		out.Field(b)
		out.FieldString(`{"type":"plugin","summary":"rewrote the last message"}`)
	case "respond":
		out.FieldString(abi.ActionRespond)
		out.FieldString(`{"choices":[{"index":0,"message":{"role":"assistant","content":"answered by testplugin"},"finish_reason":"stop"}]}`)
		out.FieldString(`{"type":"plugin","summary":"answered from cache"}`)
	case "block":
		out.FieldString(abi.ActionBlock)
		out.FieldString(`{"code":403,"message":"blocked by testplugin: forbidden topic","metadata":{"patterns":["forbidden"]}}`)
		out.FieldString(`{"type":"guardrail","summary":"matched 1 pattern","data":{"action":"block","detected":true,"patterns":["forbidden"]}}`)
	case "fetch":
		fetch(in, out)
	case "trap":
		// A fatal error of the Go runtime (not a panic, which the SDK
		// recovers into the hook's error): the stack overflows a small
		// limit and the runtime aborts — a Wasm trap.
		debug.SetMaxStack(64 << 10)
		sink = recurse(1)
	case "panic":
		var p *int
		sink = *p // a Go panic: the SDK answers it as the hook's error
	case "spin":
		for {
			sink++
		}
	case "remember":
		remember(in, out)
	case "grow":
		// 64 MiB: more than a tenant's memory ceiling allows.
		big := make([]byte, 64<<20)
		for i := 0; i < len(big); i += 4096 {
			big[i] = 1
		}
		sink += int(big[len(big)-4096])
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(nil)
	case "cost", "cost_both":
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.FieldString(`{"type":"plugin","summary":"priced","cost":` + sdk.Get(in.Field(0), "config.cost").Raw + `}`)
	case "badbytes", "badtypes":
		badBytes(in, out)
	case "subchat":
		subChat(in, out)
	case "logflood":
		// Far more log than any budget allows.
		line := ""
		for len(line) < 1000 {
			line += "xxxxxxxxxx"
		}
		for i := 0; i < 5000; i++ {
			sdk.Log(1, "flood "+itoa(i)+" "+line)
		}
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(nil)
	default:
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(nil)
	}
	return nil
}

func post(in *sdk.In, out *sdk.Out) error {
	out.FieldString(abi.ActionContinue)
	if m := mode(in); m == "badbytes_post" || m == "badtypes_post" {
		content := []byte(`123`)
		if m == "badbytes_post" {
			content = []byte("\"posted \xff\xfe\"")
		}
		b, _ := sjson.SetRawBytes(append([]byte(nil), in.Field(1)...), "choices.0.message.content", content)
		out.Field(b)
		out.Field(nil)
		return nil
	}
	if mode(in) == "shout" {
		b, _ := sjson.SetBytes(append([]byte(nil), in.Field(1)...), "choices.0.message.content", "SHOUTED")
		out.Field(b)
	} else {
		out.Field(nil)
	}
	if mode(in) == "cost_both" {
		// Both hooks report config "cost": the answer's part of the fee
		// (a paid check of the answer) comes after the upstream call.
		out.FieldString(`{"type":"plugin","summary":"priced answer","cost":` + sdk.Get(in.Field(0), "config.cost").Raw + `}`)
		return nil
	}
	out.Field(nil)
	return nil
}

func chunk(in *sdk.In, out *sdk.Out) error {
	out.FieldString(abi.ActionContinue)
	c := in.Field(1)
	if mode(in) == "shout" {
		if t := gjson.GetBytes(c, "choices.0.delta.content"); t.Type == gjson.String && t.Str != "" {
			b, _ := sjson.SetBytes(append([]byte(nil), c...), "choices.0.delta.content", "X")
			out.Field(b)
			return nil
		}
	}
	if m := mode(in); m == "badbytes" || m == "badtypes" || m == "badbytes_post" || m == "badtypes_post" {
		if t := gjson.GetBytes(c, "choices.0.delta.content"); t.Type == gjson.String && t.Str != "" {
			content := []byte(`123`)
			if m == "badbytes" || m == "badbytes_post" {
				content = []byte("\"chunk \xff\"")
			}
			b, _ := sjson.SetRawBytes(append([]byte(nil), c...), "choices.0.delta.content", content)
			out.Field(b)
			return nil
		}
	}
	if mode(in) == "garble" {
		if t := gjson.GetBytes(c, "choices.0.delta.content"); t.Type == gjson.String && t.Str != "" {
			// Not a chunk: the host must drop it.
			out.FieldString(`"not a chunk"`)
			// A chunk whose JSON whitespace holds line breaks: framed as
			// one event, it reaches the client whole.
			out.FieldString("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"G\"}}],\r\"object\":\"chat.completion.chunk\"\n}")
			return nil
		}
	}
	out.Field(c)
	return nil
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// recurse never returns: each call adds a frame.
func recurse(n int) int { return recurse(n+1) + n }

func fetch(in *sdk.In, out *sdk.Out) {
	// Fetch config.url through the host and answer with what came back.
	url := sdk.Get(in.Field(0), "config.url").Str
	status, _, body, err := sdk.HTTP("GET", url, "Accept: application/json\n", nil)
	text := "fetched " + itoa(status) + ": " + string(body)
	if err != nil {
		text = "fetch failed: " + err.Error()
		if e, ok := err.(*sdk.HTTPError); ok && e.Denied {
			text = "fetch denied: " + e.Message
		}
	}
	out.FieldString(abi.ActionRespond)
	b, _ := sjson.SetBytes([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`), "choices.0.message.content", text)
	out.Field(b)
	out.Field(nil)
}

func remember(in *sdk.In, out *sdk.Out) {
	body := in.Field(1)
	// Answer with the prompt this instance saw before, then keep this
	// one: a host that reuses memory across calls leaks it.
	prompt := gjson.GetBytes(body, "messages.0.content").Str
	b, _ := sjson.SetBytes([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`), "choices.0.message.content", "previous prompt: "+remembered)
	remembered = prompt
	out.FieldString(abi.ActionRespond)
	out.Field(b)
	out.Field(nil)
}

func badBytes(in *sdk.In, out *sdk.Out) {
	body := in.Field(1)
	if gjson.GetBytes(body, "stream").Bool() {
		// Streams get the chunks' version (post_chunk).
		out.FieldString(abi.ActionContinue)
		out.Field(nil)
		out.Field(nil)
		return
	}
	content := `123`
	if mode(in) == "badbytes" {
		content = "\"answered \xff\xfe by testplugin\""
	}
	out.FieldString(abi.ActionRespond)
	out.FieldString(`{"choices":[{"index":0,"message":{"role":"assistant","content":` + content + `},"finish_reason":"stop"}]}`)
	out.FieldString("{\"type\":\"plugin\",\"summary\":\"summary \xff\"}")
}

func subChat(in *sdk.In, out *sdk.Out) {
	body := in.Field(1)
	// Send the request on as a chat sub-request whose plugins are
	// config.sub, and answer with what came back (status and content).
	b, _ := sjson.SetRawBytes([]byte(`{"model":""}`), "messages", []byte(gjson.GetBytes(body, "messages").Raw))
	b, _ = sjson.SetBytes(b, "model", gjson.GetBytes(body, "model").Str)
	b, _ = sjson.SetRawBytes(b, "plugins", []byte(sdk.Get(in.Field(0), "config.sub").Raw))
	status, resp, err := sdk.Chat(b)
	text := "sub-request " + itoa(status) + ": " + gjson.GetBytes(resp, "choices.0.message.content").Str + gjson.GetBytes(resp, "error.message").Str
	if err != nil {
		text = "sub-request failed: " + err.Error()
	}
	c, _ := sjson.Set(`{}`, "c", text)
	out.FieldString(abi.ActionRespond)
	out.FieldString(`{"choices":[{"index":0,"message":{"role":"assistant","content":` + gjson.Get(c, "c").Raw + `},"finish_reason":"stop"}]}`)
	out.FieldString(`{"type":"plugin","summary":"answered with a sub-request"}`)
}
