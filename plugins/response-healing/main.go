//go:build wasip1

// Command response-healing is the spec's response-healing plugin: when a
// request asked for JSON (response_format json_object or json_schema) and
// the model answered with broken JSON — in a Markdown fence, among prose,
// with trailing commas, JavaScript or Python spellings, missing commas,
// raw newlines or unescaped quotes in strings, or cut off — it repairs the
// message content into valid JSON, and checks it against the request's
// schema. Answers to requests that did not ask for JSON are never touched;
// content that already parses is left byte for byte.
//
// The repair and the hooks live in package heal; this is the module's
// wiring to the host. pre_request only reads the request's response_format
// and hands it to post_response in the plugin's state. Streams are passed
// through untouched: a stream's JSON is only whole at its end, after the
// client has seen it.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/response-healing/heal"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	sdk.Handle(abi.HookPreRequest, heal.PreRequest)
	sdk.Handle(abi.HookPostResponse, heal.PostResponse)
}
