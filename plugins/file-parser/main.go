//go:build wasip1

// Command file-parser is the first-party `file-parser` module: the spec's
// file-parser plugin (2.3). `file` content parts (data URLs, or https URLs
// fetched through the host) become text before routing (PDF text
// extraction inside the module, engine pdf-text; page images transcribed
// by a vision model through the host's chat function, engine vision), or
// go to the provider as they are (engine native); the answer carries
// `file` annotations whose hashes let a later request skip the parsing.
// The logic lives in package fileparser; this is the glue to the ABI and
// to the host functions kv, chat and http.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/file-parser/fileparser"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	m := &fileparser.Module{KVGet: sdk.KVGet, KVPut: sdk.KVPut, Chat: chat, ChatBatch: chatBatch, HTTP: fetch}
	sdk.Handle(abi.HookPreRequest, m.PreRequest)
	sdk.Handle(abi.HookPostResponse, m.PostResponse)
	sdk.Handle(abi.HookPostChunk, m.PostChunk)
}

// chat and fetch hand the host's failures on as fileparser.HostErr.
func chat(body []byte) (int, []byte, error) {
	status, resp, err := sdk.Chat(body)
	if he, ok := err.(*sdk.HostError); ok {
		return 0, nil, &fileparser.HostErr{Code: he.Code, Message: he.Message}
	}
	return status, resp, err
}

func chatBatch(bodies [][]byte) ([]fileparser.ChatReply, error) {
	rs, err := sdk.ChatBatch(bodies)
	if he, ok := err.(*sdk.HostError); ok {
		return nil, &fileparser.HostErr{Code: he.Code, Message: he.Message}
	}
	if err != nil {
		return nil, err
	}
	out := make([]fileparser.ChatReply, len(rs))
	for i, r := range rs {
		out[i] = fileparser.ChatReply{Status: r.Status, Body: r.Body}
	}
	return out, nil
}

func fetch(method, url, headers string, body []byte) (int, string, []byte, error) {
	status, hdr, resp, err := sdk.HTTP(method, url, headers, body)
	if he, ok := err.(*sdk.HTTPError); ok {
		return 0, "", nil, &fileparser.HostErr{Code: he.Code, Message: he.Message}
	}
	return status, hdr, resp, err
}
