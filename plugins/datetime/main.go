//go:build wasip1

// Command datetime is the first-party module behind the service:datetime
// server tool: it answers the current date and time, in UTC or in the IANA
// time zone the model (or the request's tool parameters) names.
//
// The module has no clock of its own (the host's Wasm runtime gives guests
// a fixed one, so modules stay deterministic): the time is the "now" of
// the tool_call ctx, which the host sets when it makes the call.
package main

import (
	"strconv"
	"time"
	_ "time/tzdata" // the zone database: a Wasm guest has no /usr/share/zoneinfo

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

func main() {}

func init() { sdk.Handle(abi.HookToolCall, toolCall) }

// toolCall: in ctx, tool name, arguments; out result JSON, cost ("" = free).
func toolCall(in *sdk.In, out *sdk.Out) error {
	ctx, args := in.Field(0), in.Field(2)
	out.FieldString(answer(ctx, args))
	out.FieldString("")
	return nil
}

func answer(ctx, args []byte) string {
	now, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(ctx, "now").Str)
	if err != nil {
		return `{"error":"the host gave no current time"}`
	}
	zone := gjson.GetBytes(args, "timezone").Str
	if zone == "" {
		zone = gjson.GetBytes(ctx, "parameters.timezone").Str // the request's default
	}
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return `{"error":` + strconv.Quote("unknown time zone "+strconv.Quote(zone)+": use an IANA name such as Europe/Oslo, or UTC") + `}`
	}
	t := now.In(loc)
	name, offset := t.Zone()
	b := make([]byte, 0, 256)
	b = append(b, `{"datetime":`...)
	b = strconv.AppendQuote(b, t.Format(time.RFC3339))
	b = append(b, `,"date":`...)
	b = strconv.AppendQuote(b, t.Format("2006-01-02"))
	b = append(b, `,"time":`...)
	b = strconv.AppendQuote(b, t.Format("15:04:05"))
	b = append(b, `,"weekday":`...)
	b = strconv.AppendQuote(b, t.Weekday().String())
	b = append(b, `,"timezone":`...)
	b = strconv.AppendQuote(b, loc.String())
	b = append(b, `,"abbreviation":`...)
	b = strconv.AppendQuote(b, name)
	b = append(b, `,"utc_offset_seconds":`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `,"unix":`...)
	b = strconv.AppendInt(b, t.Unix(), 10)
	return string(append(b, '}'))
}
