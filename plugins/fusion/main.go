//go:build wasip1

// Command fusion is the spec's fusion plugin (2.3): a panel of models
// answers in parallel, a judge compares the answers, the judge model writes
// the final answer. Its logic lives in package fuse; this is the module's
// wiring to the host (chat_reserve, chat_batch).
package main

import (
	"errors"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/plugins/fusion/fuse"
	"github.com/switchyard/switchyard/sdk"
)

func main() {}

// denied turns the host's "no chat here" (a sub-request's modules get no
// chat: depth 1) into fuse.ErrNoChat.
func denied(err error) error {
	var he *sdk.HostError
	if errors.As(err, &he) && he.Code == abi.HostDenied {
		return fuse.ErrNoChat
	}
	return err
}

var host = fuse.Host{
	Reserve: func(plan []byte) (int, []byte, error) {
		status, body, err := sdk.ChatReserve(plan)
		if err != nil {
			return 0, nil, denied(err)
		}
		return status, append([]byte(nil), body...), nil
	},
	Batch: func(bodies [][]byte) ([]fuse.Result, error) {
		rs, err := sdk.ChatBatch(bodies)
		if err != nil {
			return nil, denied(err)
		}
		out := make([]fuse.Result, len(rs))
		for i, r := range rs {
			out[i] = fuse.Result{Status: r.Status, Body: r.Body}
		}
		return out, nil
	},
}

func init() {
	sdk.Handle(abi.HookPreRequest, func(in *sdk.In, out *sdk.Out) error {
		o := fuse.Run(host, in.Field(0), in.Field(1))
		out.FieldString(o.Action)
		out.Field(o.Body)
		out.Field(o.Summary)
		return nil
	})
}
