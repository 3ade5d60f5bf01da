package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/sjson"
)

// nativeHoldFromNativeBody (run by TestMessagesNativeJSON, on its
// gateway): a native Messages request is held on the body it sends, not on its chat
// translation (issue 33, "native hold from translated prompt"): an earlier
// turn's thinking block — dropped by the translation, sent as it is to an
// Anthropic upstream — counts in the hold. The request is the fixture's
// with 200 KB of thinking in its assistant turn; each byte may be a token
// at the endpoint's $3 per million prompt tokens.
func nativeHoldFromNativeBody(t *testing.T, g *gatewaytest.Gateway, f *anthropicFake) {
	calls := f.count()
	req, err := sjson.SetBytes(nativeFixture(t, "request_thinking_tools.json"), "messages.1.content.0.thinking", strings.Repeat("Let me think. ", 15000))
	if err != nil {
		t.Fatal(err)
	}
	resp, b, err := g.Request(http.MethodPost, "/messages", string(req), anthropicHeaders(g.Key)...)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, b)
	}
	if f.count() != calls+1 {
		t.Fatalf("%d upstream calls", f.count()-calls)
	}
	rec := generation(t, g, g.Key, resp.Header.Get("X-Generation-Id"))
	const perToken = billing.Nanos(3_000) // $3 per million
	if held, min := usd(t, rec.Get("held")), perToken*billing.Nanos(len(req)); held < min {
		t.Fatalf("held %s for a %d-byte native body; its prompt alone may cost %s", held, len(req), min)
	}
}
