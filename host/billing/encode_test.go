package billing

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

func randString(rng *rand.Rand) string {
	pool := []string{"", "acct_1", "gen-0Abc", "openai/gpt-4o", "a\"b", `back\slash`, "<html>&", "ünïcode", "line\nbreak", "\u2028", "bad\xffutf8", "tab\t"}
	return pool[rng.IntN(len(pool))]
}

func randNanos(rng *rand.Rand) Nanos {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return Nanos(rng.Int64N(1_000_000_000))
	case 2:
		return -Nanos(rng.Int64N(1 << 62))
	}
	return Nanos(rng.Int64())
}

func randInt(rng *rand.Rand) int64 {
	if rng.IntN(2) == 0 {
		return 0
	}
	return rng.Int64N(1<<40) - 1<<39
}

func randTime(rng *rand.Rand) time.Time {
	if rng.IntN(5) == 0 {
		return time.Time{}
	}
	return time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1e9)).UTC()
}

// TestEncodersMatchEncodingJSON: the hand-written encoders write byte for
// byte what encoding/json writes for the same records, and the decoders
// read them back (and still read what they do not recognise).
func TestEncodersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for i := range 3000 {
		u := Usage{PromptTokens: randInt(rng), CompletionTokens: randInt(rng), ReasoningTokens: randInt(rng), CachedTokens: randInt(rng),
			AudioTokens: randInt(rng), Images: randInt(rng), Requests: randInt(rng), Estimated: rng.IntN(2) == 0}
		c := Cost{Total: randNanos(rng), Prompt: randNanos(rng), CacheRead: randNanos(rng), Completion: randNanos(rng),
			Reasoning: randNanos(rng), Audio: randNanos(rng), Request: randNanos(rng), Image: randNanos(rng)}
		g := Generation{ID: randString(rng), AccountID: randString(rng), KeyHash: randString(rng), Model: randString(rng),
			Provider: randString(rng), Status: randString(rng), FinishReason: randString(rng), Streamed: rng.IntN(2) == 0,
			Usage: u, Cost: c, Attempts: int(randInt(rng)), FailedCost: randNanos(rng), Charged: randNanos(rng),
			Uncollected: randNanos(rng), Held: randNanos(rng), LatencyMs: randInt(rng), TTFTMs: randInt(rng), PluginUs: randInt(rng),
			Error: randString(rng), Anomaly: randString(rng), CacheHitOf: randString(rng), CreatedAt: randTime(rng), SettledAt: randTime(rng)}
		for range rng.IntN(3) {
			g.Fees = append(g.Fees, Fee{Tool: randString(rng), Calls: int(randInt(rng)), Cost: randNanos(rng)})
			g.FeesCost += randNanos(rng)
		}
		var lim *int64
		if rng.IntN(2) == 0 {
			l := randInt(rng)
			lim = &l
		}
		h := holdRec{ID: randString(rng), Account: randString(rng), Key: randString(rng), KeyName: randString(rng), Limit: lim,
			Reset: randString(rng), Model: randString(rng), Provider: randString(rng), Streamed: rng.IntN(2) == 0, Hold: randNanos(rng),
			Rates: Rates{Prompt: randNanos(rng), CacheRead: randNanos(rng), Completion: randNanos(rng), Reasoning: randNanos(rng),
				Audio: randNanos(rng), Request: randNanos(rng), Image: randNanos(rng)},
			Created: randTime(rng), FailedN: int(randInt(rng)), Failed: c, Usage: u, PromptEst: randInt(rng), MaxOut: randInt(rng),
			Choices: randInt(rng), Images: randInt(rng), Owner: randString(rng)}
		a := accountRec{Balance: randNanos(rng), Credits: randNanos(rng), Usage: randNanos(rng)}
		k := keyUsage{Account: randString(rng), Total: randNanos(rng), Day: period{randInt(rng), randNanos(rng)},
			Week: period{randInt(rng), randNanos(rng)}, Month: period{randInt(rng), randNanos(rng)}}

		for _, tc := range []struct {
			name string
			v    any
			got  []byte
		}{
			{"generation", &g, appendGeneration(nil, &g)},
			{"hold", &h, h.appendJSON(nil)},
			{"account", &a, a.appendJSON(nil)},
			{"key", &k, k.appendJSON(nil)},
		} {
			want, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tc.got, want) {
				t.Fatalf("%d %s:\n got %s\nwant %s", i, tc.name, tc.got, want)
			}
		}
		var a2 accountRec
		if err := decodeAccount(a.appendJSON(nil), &a2); err != nil || a2 != a {
			t.Fatalf("account round trip: %+v, %v; want %+v", a2, err, a)
		}
		var k2, k3 keyUsage
		kj := k.appendJSON(nil)
		if err := decodeKeyUsage(kj, &k2); err != nil || (utf8.ValidString(k.Account) && k2 != k) {
			t.Fatalf("key round trip: %+v, %v; want %+v", k2, err, k)
		}
		if err := json.Unmarshal(kj, &k3); err != nil || k3 != k2 {
			t.Fatalf("key: decoder %+v, encoding/json %+v", k2, k3)
		}
	}
	// Layouts the encoders do not write are read by encoding/json.
	var a accountRec
	if err := decodeAccount([]byte(` {"usage": 1.5e0, "balance":2}`), &a); err != nil || a != (accountRec{Balance: 2 * NanosPerUSD, Usage: 1_500_000_000}) {
		t.Fatalf("fallback account: %+v, %v", a, err)
	}
	k := keyUsage{Account: "preset"}
	if err := decodeKeyUsage([]byte(`{"total":"x"}`), &k); err == nil {
		t.Fatalf("bad key record decoded: %+v", k)
	}
}

// BenchmarkRecordEncoding: one settlement's record work (decode and encode
// the account and key records, encode the generation record) with
// encoding/json and with the hand-written codecs.
func BenchmarkRecordEncoding(b *testing.B) {
	now := time.Now().UTC()
	g := Generation{ID: NewID(), AccountID: "acct_0123456789", KeyHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Model: "openai/gpt-4o-mini", Provider: "openai", Status: StatusSuccess, FinishReason: "stop", Usage: Usage{PromptTokens: 900, CompletionTokens: 300, Requests: 1},
		Cost: Cost{Total: 315000, Prompt: 135000, Completion: 180000}, Attempts: 1, Charged: 315000, Held: 3_000_000, LatencyMs: 12, CreatedAt: now, SettledAt: now}
	acct, _ := json.Marshal(accountRec{Balance: 999_999_000_000, Credits: 1_000_000_000_000, Usage: 1_000_000})
	key, _ := json.Marshal(keyUsage{Account: g.AccountID, Total: 123456789, Day: period{1763856000, 1234}, Week: period{1763856000, 1234}, Month: period{1763856000, 1234}})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a accountRec
			var k keyUsage
			_ = json.Unmarshal(acct, &a)
			_, _ = json.Marshal(&a)
			_ = json.Unmarshal(key, &k)
			_, _ = json.Marshal(&k)
			_, _ = json.Marshal(&g)
		}
	})
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a accountRec
			var k keyUsage
			_ = decodeAccount(acct, &a)
			_ = a.appendJSON(nil)
			_ = decodeKeyUsage(key, &k)
			_ = k.appendJSON(nil)
			_ = appendGeneration(nil, &g)
		}
	})
}
