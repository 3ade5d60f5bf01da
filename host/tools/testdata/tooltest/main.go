//go:build wasip1

// Command tooltest is a test-only server-tool module (service:tooltest): it
// answers every call with its arguments, the request's tool parameters and
// its config, for a fee of $0.0015, so tests can see what a tool module is
// given and that its fee is charged; asked to, it fails or reports a
// nonsense cost or the cost it is given, or answers with a hostile result.
package main

import (
	"errors"
	"strconv"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

func main() {}

func init() { sdk.Handle(abi.HookToolCall, toolCall) }

// spins is what {"spin": true} counts while it never returns.
var spins int

func toolCall(in *sdk.In, out *sdk.Out) error {
	ctx, name, args := in.Field(0), in.Field(1), in.Field(2)
	if gjson.GetBytes(args, "fail").Bool() {
		return errors.New("tooltest was asked to fail")
	}
	if gjson.GetBytes(args, "spin").Bool() {
		for { // until the host cuts the call (its time limit, or the request's)
			spins++
		}
	}
	if gjson.GetBytes(args, "hostile").Bool() {
		// A valid JSON result whose string holds what a careless JSON
		// encoder breaks on: DEL, an escaped ESC, bytes that are not
		// UTF-8, a flag written with tag characters (U+E0067…).
		out.FieldString(`{"text":"DEL[` + "\x7f" + `] ESC[\u001b] bad[` + "\xff\xfe" + `] flag[` + "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F" + `]"}`)
		out.FieldString("")
		return nil
	}
	if q := gjson.GetBytes(args, "chat"); q.Exists() {
		// A chat sub-request (the chat host function) with the given
		// body; the result says what came back.
		status, resp, err := sdk.Chat([]byte(q.Raw))
		if err != nil {
			out.FieldString(`{"chat_error":` + sdk.Quote(err.Error()) + `}`)
		} else {
			out.FieldString(`{"chat_status":` + strconv.Itoa(status) + `,"chat":` + string(resp) + `}`)
		}
		out.FieldString("")
		return nil
	}
	out.FieldString(`{"echo":` + string(args) + `,"name":` + sdk.Quote(string(name)) +
		`,"parameters":` + gjson.GetBytes(ctx, "parameters").Raw + `,"config":` + gjson.GetBytes(ctx, "config").Raw +
		`,"request_id":` + sdk.Quote(gjson.GetBytes(ctx, "request_id").Str) + `,"calls":` + gjson.GetBytes(ctx, "calls").Raw + `}`)
	if gjson.GetBytes(args, "bad_cost").Bool() {
		out.FieldString("lots")
		return nil
	}
	if c := gjson.GetBytes(args, "cost"); c.Exists() {
		out.FieldString(c.String()) // the fee asked for, however large
		return nil
	}
	out.FieldString("0.0015")
	return nil
}
