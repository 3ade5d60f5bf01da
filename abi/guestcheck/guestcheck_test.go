package guestcheck

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
)

// fakeModule answers every call with out or err.
type fakeModule struct {
	out [][]byte
	err error
	got [][]byte
}

func (m *fakeModule) Call(_ context.Context, _ abi.Hook, fields ...[]byte) ([][]byte, error) {
	m.got = fields
	return m.out, m.err
}

func (m *fakeModule) Close(context.Context) error { return nil }

// The guest check fails a module that breaks on a call (until 2026-11-29
// a trap counted as "refused the sample input", shown only under -v),
// panics (the Go SDK recovers it into an error) or does not implement a
// hook its manifest declares, and accepts a hook that refuses its input
// with a message.
func TestCallVerdict(t *testing.T) {
	result := sampleInput(abi.HookChatResponse)[0]
	for _, tc := range []struct {
		name        string
		hook        abi.Hook
		m           *fakeModule
		passthrough bool
		problem     string // "" = accepted
	}{
		{"answers", abi.HookChatResponse, &fakeModule{out: [][]byte{result}}, false, ""},
		{"refuses with a message", abi.HookChatResponse, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in chat_response: not my format"}}, false, ""},
		{"traps", abi.HookPostResponse, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in post_response: trapped: wasm error: unreachable", Broke: true}}, false, "the call broke"},
		{"runs out of time", abi.HookPreRequest, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in pre_request: exceeded its time limit of 500 ms", Broke: true}}, false, "the call broke"},
		{"panics (recovered by the Go SDK)", abi.HookPostResponse, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in post_response: panic: runtime error: index out of range [3] with length 0 (at main.go:25)"}}, false, "panicked"},
		{"refuses, quoting a panic", abi.HookPostResponse, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in post_response: upstream said: panic: no"}}, false, ""},
		{"declared, not implemented (Go SDK)", abi.HookPostChunk, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in post_chunk: hook post_chunk is not implemented by this module"}}, false, "does not implement"},
		{"declared, not exported (Extism)", abi.HookPostChunk, &fakeModule{err: &Failure{Status: 502, Message: "module x failed in post_chunk: trapped: unknown function: post_chunk", Broke: true}}, false, "does not implement"},
		{"passthrough, not implemented", abi.HookPostResponse, &fakeModule{err: &Failure{Status: 502, Message: "trapped: unknown function: post_response", Broke: true}}, true, ""},
		{"passthrough that edits", abi.HookPostResponse, &fakeModule{out: [][]byte{[]byte(`{"choices":[]}`)}}, true, "changed its input"},
		{"wrong shape", abi.HookChatResponse, &fakeModule{out: [][]byte{[]byte(`{"x":1}`)}}, false, "want one field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problem, _ := callProblem(context.Background(), tc.m, tc.hook, sampleInput(tc.hook), tc.passthrough)
			if (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
				t.Fatalf("verdict %q, want one containing %q", problem, tc.problem)
			}
		})
	}
}

// The large inputs are past 64 KiB (a guest misreading a frame length of
// one or two bytes fails on them) and stay valid JSON.
func TestLargeInputs(t *testing.T) {
	for _, hook := range []abi.Hook{abi.HookChatRequest, abi.HookPreRequest, abi.HookChatResponse, abi.HookPostResponse,
		abi.HookChatStreamEvent, abi.HookPostChunk, abi.HookEmbedRequest, abi.HookError, abi.HookToolCall} {
		in := largeInput(hook)
		if n := inputSize(in); n <= 64<<10 {
			t.Errorf("%s: large input of %d bytes", hook, n)
		}
		for i, f := range in {
			if len(f) > 1000 && !json.Valid(f) {
				t.Errorf("%s: field %d is not valid JSON", hook, i)
			}
		}
	}
}
