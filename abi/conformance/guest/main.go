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
//
// chat_stream_event always treats its state field as a decimal counter: it
// returns the counter plus one and as many chunks as its event data says.
package main

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	for _, h := range []abi.Hook{
		abi.HookChatRequest, abi.HookChatResponse, abi.HookChatStreamEvent, abi.HookEmbedRequest,
		abi.HookEmbedResponse, abi.HookError, abi.HookPreRequest, abi.HookPostResponse, abi.HookPostChunk,
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
		}
		return frame(h, in, out)
	}
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
	default: // chat_response, embed_response: every input field after ctx
		for i := 1; i < in.Len(); i++ {
			out.Field(in.Field(i))
		}
	}
	return nil
}
