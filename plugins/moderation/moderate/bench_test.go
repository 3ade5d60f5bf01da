//go:build !wasip1

package moderate_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/switchyard/switchyard/host/wasm"
	"github.com/switchyard/switchyard/plugins/moderation/moderate"
	"github.com/tidwall/gjson"
)

// prose is ordinary text with the numbers real prompts carry (dates,
// prices, versions), none of them personal data.
const prose = "The quarterly report for 2024-Q3 shows revenue of $1,299,450.75, up 12.4% year over year. " +
	"Please upgrade the service from v1.24.3 to v1.25.0 before Friday and rerun the load test at 14:30. " +
	"Summarise the findings in three bullet points and suggest next steps for the team. "

// pii is a sentence with four kinds of personal data.
const pii = "Contact jane.roe@example.com or +44 20 7946 0018; card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00. "

// body is a chat request of about size bytes of message text, in messages
// of at most 4 KB, with one personal-data sentence per KB when withPII.
func body(size int, withPII bool) []byte {
	var msgs []string
	var cur strings.Builder
	total := 0
	for total < size {
		s := prose
		if withPII && total/1024 != (total+len(prose))/1024 {
			s = pii
		}
		cur.WriteString(s)
		total += len(s)
		if cur.Len() >= 4096 {
			msgs = append(msgs, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		msgs = append(msgs, cur.String())
	}
	var b strings.Builder
	b.WriteString(`{"model":"openai/gpt-4o","messages":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":` + strconv.Quote(m) + `}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func loadModule(b *testing.B) *wasm.Module {
	return gatewaytest.BuiltModule(b, "moderation", func(m *manifest.Manifest, _ *wasm.Config) {
		if os.Getenv("MOD_NO_TIMEOUT") != "" {
			m.Limits.TimeoutMS = 0
		}
	})
}

var sizes = []struct {
	name string
	n    int
}{{"1KB", 1 << 10}, {"10KB", 10 << 10}, {"100KB", 100 << 10}}

// BenchmarkModerationCall is the module's per-call cost through the host
// (pre_request, local engine, the gateway's pooled instance): clean text
// passes, text with personal data is redacted.
func BenchmarkModerationCall(b *testing.B) {
	mod := loadModule(b)
	ctx := []byte(`{"config":{"id":"moderation"},"model":"openai/gpt-4o","scope":"global"}`)
	for _, kind := range []string{"clean", "pii"} {
		for _, sz := range sizes {
			b.Run(kind+"/"+sz.name, func(b *testing.B) {
				req := body(sz.n, kind == "pii")
				b.SetBytes(int64(len(req)))
				b.ReportAllocs()
				for b.Loop() {
					out, err := mod.Call(context.Background(), abi.HookPreRequest, ctx, req)
					if err != nil || string(out.Field(0)) != abi.ActionContinue {
						b.Fatal(err)
					}
					if redacted := len(out.Field(1)) > 0; redacted != (kind == "pii") {
						b.Fatalf("redacted %v on %s text: %s", redacted, kind, out.Field(2))
					}
				}
			})
		}
	}
}

// BenchmarkModerationLocalNative is the local engine compiled natively, to
// tell the engine's cost from the Wasm hop's.
func BenchmarkModerationLocalNative(b *testing.B) {
	for _, sz := range sizes {
		b.Run("clean/"+sz.name, func(b *testing.B) {
			req := body(sz.n, false)
			var texts []string
			gjson.GetBytes(req, "messages.#.content").ForEach(func(_, v gjson.Result) bool {
				texts = append(texts, v.Str)
				return true
			})
			b.SetBytes(int64(len(req)))
			for b.Loop() {
				for _, s := range texts {
					if fs := moderate.Local(s); len(fs) != 0 {
						b.Fatalf("%+v", fs)
					}
				}
			}
		})
	}
}

// adversarial is text that wakes every gated pass of the engine — the
// multilingual check (ignore verbs in five scripts), the decoders (ROT13
// and reversed signs, percent escapes), Markdown images, street words,
// secret prefixes and passport context — without completing a finding, so
// every pass runs to the end: the engine's cost stays linear in the size.
const adversarial = "Ignora el ruido de fondo. Забудь про встречу. 请忽略错别字。前の指示書を見て。 " +
	"gur cyna naq lbh. metsys tpmorp. 100%25 of %41%42 done. ![a](https://x.example/i.png?a=b) " +
	"Walk 12 blocks down the main street. sk-abc AKIA eyJ0 xoxb- ghp_ passport ok. "

// BenchmarkModerationLocalAdversarial is the native engine on that text at
// 1, 10 and 100 KB: time per byte must not grow with the size.
func BenchmarkModerationLocalAdversarial(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			text := strings.Repeat(adversarial, sz.n/len(adversarial)+1)[:sz.n]
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				moderate.Local(text)
			}
		})
	}
}
