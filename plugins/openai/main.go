//go:build wasip1

// Command openai is the adapter module for OpenAI and every
// OpenAI-compatible server. The translation lives in package translate; this
// is the glue that registers it.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/openai/translate"
	"github.com/switchyard/switchyard/sdk"
)

// build names this build of the module in a request header. Override with
// -ldflags "-X main.build=…" (the tests' variant build does).
var build = "openai/1.0.0"

func main() {}

func init() {
	a := &translate.Adapter{Build: build}
	sdk.Handle(abi.HookChatRequest, a.ChatRequest)
	sdk.Handle(abi.HookChatResponse, translate.ChatResponse)
	sdk.Handle(abi.HookChatStreamEvent, translate.ChatStreamEvent)
	sdk.Handle(abi.HookEmbedRequest, a.EmbedRequest)
	sdk.Handle(abi.HookEmbedResponse, translate.PassBody)
	sdk.Handle(abi.HookError, translate.MapError)
}
