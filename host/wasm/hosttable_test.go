package wasm

import (
	"context"
	"slices"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/wasm/rewrite"
	"github.com/tetratelabs/wazero"
)

// The host module exports exactly the functions a manifest may grant and
// the rewrite's __yield; the grantable ones are ABI v1's (a change here
// changes every validation key, validator).
func TestHostModuleExports(t *testing.T) {
	want := []string{
		abi.HostChat, abi.HostChatBatch, abi.HostChatReserve, abi.HostCountTokens, abi.HostHTTPRequest,
		abi.HostHTTPResponse, abi.HostKVGet, abi.HostKVPut, abi.HostLog, abi.HostResult,
		abi.HostEmbed, abi.HostVectorPut, abi.HostVectorSearch, abi.HostMetric,
	}
	slices.Sort(want)
	var grantable []string
	for name := range hostFunctions {
		grantable = append(grantable, name)
	}
	slices.Sort(grantable)
	if !slices.Equal(grantable, want) {
		t.Fatalf("grantable host functions %v, want %v", grantable, want)
	}

	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	e := NewEngine(Config{})
	defer e.Close(ctx)
	if err := e.instantiateHost(ctx, rt); err != nil {
		t.Fatal(err)
	}
	var exported []string
	for name := range rt.Module(abi.ImportModule).ExportedFunctionDefinitions() {
		exported = append(exported, name)
	}
	slices.Sort(exported)
	if want := slices.Sorted(slices.Values(append(want, rewrite.YieldImport))); !slices.Equal(exported, want) {
		t.Fatalf("host module exports %v, want %v", exported, want)
	}
}
