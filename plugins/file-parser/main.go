//go:build wasip1

// Command file-parser is the first-party `file-parser` module: the spec's
// file-parser plugin (2.3). `file` content parts become text before
// routing (PDF text extraction inside the module, engine pdf-text), or go
// to the provider as they are (engine native); the answer carries `file`
// annotations whose hashes let a later request skip the parsing. The logic
// lives in package fileparser; this is the glue to the ABI and to kv.
package main

import (
	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/file-parser/fileparser"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

func init() {
	m := &fileparser.Module{KVGet: sdk.KVGet, KVPut: sdk.KVPut}
	sdk.Handle(abi.HookPreRequest, m.PreRequest)
	sdk.Handle(abi.HookPostResponse, m.PostResponse)
	sdk.Handle(abi.HookPostChunk, m.PostChunk)
}
