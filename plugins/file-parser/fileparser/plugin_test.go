package fileparser

import (
	"encoding/base64"
	"testing"

	"github.com/switchyard/switchyard/sdk"
	"github.com/tidwall/gjson"
)

// The default engine follows what the host says of the endpoints the
// request may go to: native when they all read files (ctx.context.
// native_files), pdf-text otherwise; an explicit engine wins.
func TestDefaultEngine(t *testing.T) {
	body := `{"model":"m/x","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,` +
		base64.StdEncoding.EncodeToString(readPDF(t, "groff.pdf")) + `"}}]}]}`
	cases := []struct{ ctx, engine string }{
		{`{"config":{"id":"file-parser"},"model":"m/x"}`, EnginePDFText},
		{`{"config":{"id":"file-parser"},"model":"m/x","context":{"native_files":false}}`, EnginePDFText},
		{`{"config":{"id":"file-parser"},"model":"m/x","context":{"native_files":true}}`, EngineNative},
		{`{"config":{"id":"file-parser","pdf":{"engine":"pdf-text"}},"model":"m/x","context":{"native_files":true}}`, EnginePDFText},
		{`{"config":{"id":"file-parser","pdf":{"engine":"native"}},"model":"m/x"}`, EngineNative},
	}
	m := &Module{}
	for _, tc := range cases {
		out, err := sdk.Run(m.PreRequest, []byte(tc.ctx), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out[2], "data.engine").Str; got != tc.engine || string(out[0]) != "continue" {
			t.Fatalf("%s: engine %q, action %s", tc.ctx, got, out[0])
		}
		edited := gjson.GetBytes(out[1], "messages.0.content.0.type").Str
		if (tc.engine == EngineNative) != (len(out[1]) == 0) || (tc.engine == EnginePDFText && edited != "text") {
			t.Fatalf("%s: body %.200s", tc.ctx, out[1])
		}
	}
}
