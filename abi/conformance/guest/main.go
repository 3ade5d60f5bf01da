//go:build wasip1

// Command guest is the module of the ABI conformance kit (abi/conformance).
// It implements every hook and calls every host function of docs/abi.md;
// what it does in a call is chosen by the "case" member of the ctx field,
// so the kit's runner can drive each promise of the ABI through one binary:
//
//	frame   every hook: the input fields after ctx come back, one output
//	        field each, byte for byte, in the hook's output shape
//	fail    the hook fails with a message (status byte 1)
//	panic   the guest traps
//	spin    the guest never returns (the host's time limit must stop it)
//	log     one line at each level, then one longer than a log line may be
//	http    an outbound call through http_request/http_response
//	http_repeat  the same call "times" times: how many succeeded, then the
//	        first failure's code and message
//	chat, chat_batch, chat_reserve, count_tokens, kv_get, kv_put, kv_fill,
//	embed, vector_put, vector_search
//	        the host functions
//	        through the SDK (see each case for its fields)
//	result_small  count_tokens, then its result copied with a 1-byte
//	        buffer first: the full size comes back, and a second copy
//	        gets it all
//
// chat_stream_event always treats its state field as a decimal counter: it
// returns the counter plus one and as many chunks as its event data says.
package main

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

// The raw imports, for the result_small case (the SDK always sizes its
// buffer first).
//
//go:wasmimport switchyard count_tokens
func rawCountTokens(ptr unsafe.Pointer, n int32) int64

//go:wasmimport switchyard result
func rawResult(ptr unsafe.Pointer, limit int32) int32

// hostFailure writes "error", the host's code and its message.
// answered writes a sub-request's answer — "ok", its status and its body —
// or the host call's failure.
func answered(out *sdk.Out, status int, body []byte, err error) error {
	if err != nil {
		return hostFailure(out, err)
	}
	out.FieldString("ok")
	out.FieldString(strconv.Itoa(status))
	out.Field(body)
	return nil
}

func hostFailure(out *sdk.Out, err error) error {
	out.FieldString("error")
	if he, ok := err.(*sdk.HostError); ok {
		out.FieldString(strconv.FormatInt(he.Code, 10))
	} else if he, ok := err.(*sdk.HTTPError); ok {
		out.FieldString(strconv.FormatInt(he.Code, 10))
	} else {
		out.FieldString("?")
	}
	out.FieldString(err.Error())
	return nil
}

func init() {
	for _, h := range []abi.Hook{
		abi.HookChatRequest, abi.HookChatResponse, abi.HookChatStreamEvent, abi.HookEmbedRequest,
		abi.HookEmbedResponse, abi.HookError, abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk,
		abi.HookToolCall,
	} {
		sdk.Handle(h, handler(h))
	}
}

var sink int

func handler(h abi.Hook) sdk.Handler {
	return func(in *sdk.In, out *sdk.Out) error {
		ctx := in.Field(0)
		switch sdk.Get(ctx, "case").Str {
		case "fail":
			return sdk.Error("kit failure in " + h.String())
		case "panic":
			panic("kit panic in " + h.String())
		case "spin":
			for i := 0; ; i++ {
				sink = i
			}
		case "log":
			for level := int32(0); level <= 3; level++ {
				sdk.Log(level, "kit log level "+strconv.Itoa(int(level)))
			}
			sdk.Log(sdk.LevelInfo, "kit long line "+strings.Repeat("x", 5000))
			return frame(h, in, out)
		case "http":
			status, headers, body, err := sdk.HTTP(sdk.Get(ctx, "method").Str, sdk.Get(ctx, "url").Str, sdk.Get(ctx, "headers").Str, in.Field(1))
			if err != nil {
				kind := "failed"
				if err.(*sdk.HTTPError).Denied {
					kind = "denied"
				}
				out.FieldString(kind)
				out.FieldString(err.Error())
				return nil
			}
			out.FieldString(strconv.Itoa(status))
			out.FieldString(headers)
			out.Field(body)
			return nil
		case "http_repeat":
			times, _ := strconv.Atoi(sdk.Get(ctx, "times").Str)
			ok := 0
			for range times {
				_, _, _, err := sdk.HTTP("GET", sdk.Get(ctx, "url").Str, "", nil)
				if err != nil {
					out.FieldString(strconv.Itoa(ok))
					return hostFailure(out, err)
				}
				ok++
			}
			out.FieldString(strconv.Itoa(ok))
			return nil
		case "chat":
			// in: body; out: "ok", status, response body.
			status, resp, err := sdk.Chat(in.Field(1))
			return answered(out, status, resp, err)
		case "chat_batch":
			// in: bodies; out: "ok", then status and body per body.
			var bodies [][]byte
			for i := 1; i < in.Len(); i++ {
				bodies = append(bodies, in.Field(i))
			}
			rs, err := sdk.ChatBatch(bodies)
			if err != nil {
				return hostFailure(out, err)
			}
			out.FieldString("ok")
			for _, r := range rs {
				out.FieldString(strconv.Itoa(r.Status))
				out.Field(r.Body)
			}
			return nil
		case "chat_reserve":
			// in: plan; out: "ok", status, body.
			status, resp, err := sdk.ChatReserve(in.Field(1))
			return answered(out, status, resp, err)
		case "count_tokens":
			// ctx.tok_model; in: text; out: "ok", count.
			n, err := sdk.CountTokens(sdk.Get(ctx, "tok_model").Str, in.String(1))
			if err != nil {
				return hostFailure(out, err)
			}
			out.FieldString("ok")
			out.FieldString(strconv.Itoa(n))
			return nil
		case "kv_get":
			// ctx.key; out: "found", value, or "missing".
			v, ok, err := sdk.KVGet(sdk.Get(ctx, "key").Str)
			switch {
			case err != nil:
				return hostFailure(out, err)
			case !ok:
				out.FieldString("missing")
			default:
				out.FieldString("found")
				out.Field(v)
			}
			return nil
		case "kv_put":
			// ctx.key, ctx.ttl; in: value; out: "ok".
			ttl, _ := strconv.Atoi(sdk.Get(ctx, "ttl").Str)
			if err := sdk.KVPut(sdk.Get(ctx, "key").Str, in.Field(1), ttl); err != nil {
				return hostFailure(out, err)
			}
			out.FieldString("ok")
			return nil
		case "kv_fill":
			// ctx.max; in: value. Puts fill-0, fill-1, … until one fails
			// or max; out: how many succeeded, then the failure.
			limit, _ := strconv.Atoi(sdk.Get(ctx, "max").Str)
			for i := range limit {
				if err := sdk.KVPut("fill-"+strconv.Itoa(i), in.Field(1), 0); err != nil {
					out.FieldString(strconv.Itoa(i))
					return hostFailure(out, err)
				}
			}
			out.FieldString(strconv.Itoa(limit))
			return nil
		case "embed":
			// in: body; out: "ok", status, response body.
			status, resp, err := sdk.Embed(in.Field(1))
			return answered(out, status, resp, err)
		case "vector_put":
			// ctx.partition, id, tag, ttl; in: the vector as decimals
			// joined by commas ("" deletes); out: "ok", evicted.
			ttl, _ := strconv.Atoi(sdk.Get(ctx, "ttl").Str)
			n, err := sdk.VectorPut(sdk.Get(ctx, "partition").Str, sdk.Get(ctx, "id").Str, sdk.Get(ctx, "tag").Str, floats(in.String(1)), ttl)
			if err != nil {
				return hostFailure(out, err)
			}
			out.FieldString("ok")
			out.FieldString(strconv.Itoa(n))
			return nil
		case "vector_search":
			// ctx.partition, tag, min; in: the query as vector_put's;
			// out: "found", id, similarity, age seconds, or "missing".
			min, _ := strconv.ParseFloat(sdk.Get(ctx, "min").Str, 64)
			m, ok, err := sdk.VectorSearch(sdk.Get(ctx, "partition").Str, sdk.Get(ctx, "tag").Str, floats(in.String(1)), min)
			switch {
			case err != nil:
				return hostFailure(out, err)
			case !ok:
				out.FieldString("missing")
			default:
				out.FieldString("found")
				out.FieldString(m.ID)
				out.FieldString(strconv.FormatFloat(m.Similarity, 'f', 4, 64))
				out.FieldString(strconv.FormatInt(m.AgeSeconds, 10))
			}
			return nil
		case "result_small":
			// ctx.tok_model; in: text; out: the size result reports with a
			// 1-byte buffer, the byte it copied, and the whole result.
			req := abi.AppendFieldString(nil, sdk.Get(ctx, "tok_model").Str)
			req = abi.AppendField(req, in.Field(1))
			n := rawCountTokens(unsafe.Pointer(&req[0]), int32(len(req)))
			if n <= 1 {
				return sdk.Error("count_tokens returned " + strconv.FormatInt(n, 10))
			}
			small := make([]byte, 1, 2)
			full := rawResult(unsafe.Pointer(&small[0]), 1)
			all := make([]byte, full)
			again := rawResult(unsafe.Pointer(&all[0]), full)
			out.FieldString(strconv.Itoa(int(full)))
			out.Field(small)
			out.FieldString(strconv.Itoa(int(again)))
			out.Field(all)
			return nil
		}
		return frame(h, in, out)
	}
}

// floats reads "0.5,1,0" (the kit's vectors); "" is no vector.
func floats(s string) []float32 {
	if s == "" {
		return nil
	}
	var v []float32
	for _, f := range strings.Split(s, ",") {
		x, _ := strconv.ParseFloat(f, 32)
		v = append(v, float32(x))
	}
	return v
}

// frame answers in the hook's output shape with the input fields copied.
func frame(h abi.Hook, in *sdk.In, out *sdk.Out) error {
	switch h {
	case abi.HookChatRequest, abi.HookEmbedRequest:
		// method, path, headers, body: the key placeholder stays for the host.
		out.FieldString("POST")
		out.FieldString("/kit/" + h.String() + "?fields=" + strconv.Itoa(in.Len()))
		out.FieldString("Authorization: Bearer " + abi.APIKeyPlaceholder + "\nX-Kit: 1\n")
		out.Field(in.Field(1))
	case abi.HookChatStreamEvent:
		// state: a counter; then as many chunks as the event data says.
		n, _ := strconv.Atoi(in.String(2))
		out.FieldString(strconv.Itoa(n + 1))
		chunks, _ := strconv.Atoi(in.String(1))
		for i := range chunks {
			out.FieldString(`{"event":` + strconv.Itoa(n+1) + `,"chunk":` + strconv.Itoa(i) + `}`)
		}
	case abi.HookError:
		out.Field(in.Field(1)) // status
		out.Field(in.Field(2)) // message
	case abi.HookPreRequest, abi.HookPostResponse:
		out.FieldString(sdk.Get(in.Field(0), "action").Str)
		out.Field(in.Field(1))
		out.FieldString("kit summary")
	case abi.HookPostChunk:
		out.FieldString(abi.ActionContinue)
		for i := 1; i < in.Len(); i++ {
			out.Field(in.Field(i))
		}
	case abi.HookToolCall:
		// result: the tool name and arguments as JSON; cost: ctx's "cost".
		out.Open()
		out.WriteString(`{"tool":`)
		out.WriteString(strconv.Quote(in.String(1)))
		out.WriteString(`,"arguments":`)
		out.Write(in.Field(2))
		out.Byte('}')
		out.Close()
		out.FieldString(sdk.Get(in.Field(0), "cost").Str)
	default: // chat_response, embed_response: every input field after ctx
		for i := 1; i < in.Len(); i++ {
			out.Field(in.Field(i))
		}
	}
	return nil
}
