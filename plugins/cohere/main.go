//go:build wasip1

// Command cohere is the adapter module for Cohere's v2 Chat and Embed APIs.
// The translation lives in package translate; this is the glue that
// registers it.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/cohere/translate"
	"github.com/switchyard/switchyard/sdk"
)

// build names this build of the module in a request header. Override with
// -ldflags "-X main.build=…".
var build = "cohere/1.0.0"

func main() {}

func init() {
	a := &translate.Adapter{Build: build}
	sdk.Handle(abi.HookChatRequest, a.ChatRequest)
	sdk.Handle(abi.HookChatResponse, translate.ChatResponse)
	sdk.Handle(abi.HookChatStreamEvent, translate.StreamEvent)
	sdk.Handle(abi.HookEmbedRequest, a.EmbedRequest)
	sdk.Handle(abi.HookEmbedResponse, translate.EmbedResponse)
	sdk.Handle(abi.HookError, translate.MapError)
}
