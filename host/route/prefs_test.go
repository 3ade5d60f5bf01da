package route

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func f64(f float64) *float64 { return &f }

func TestParsePreferences(t *testing.T) {
	tests := []struct {
		name     string
		provider string // JSON; "" = absent
		route    string // JSON; "" = absent
		want     Preferences
		wantErr  string // substring of the 400 message
	}{
		{name: "absent", want: Preferences{}},
		{name: "null", provider: `null`, route: `null`, want: Preferences{}},
		{name: "empty object", provider: `{}`, want: Preferences{}},
		{name: "all null fields", provider: `{"allow_fallbacks":null,"data_collection":null,"order":null,"sort":null,"max_price":null,"zdr":null}`, want: Preferences{}},

		{name: "allow_fallbacks false", provider: `{"allow_fallbacks":false}`, want: Preferences{NoFallbacks: true}},
		{name: "allow_fallbacks true", provider: `{"allow_fallbacks":true}`, want: Preferences{}},
		{name: "allow_fallbacks string", provider: `{"allow_fallbacks":"no"}`, wantErr: "provider.allow_fallbacks: must be a boolean"},

		{name: "data_collection deny", provider: `{"data_collection":"deny"}`, want: Preferences{DataCollection: "deny"}},
		{name: "data_collection allow", provider: `{"data_collection":"allow"}`, want: Preferences{DataCollection: "allow"}},
		{name: "data_collection bad", provider: `{"data_collection":"never"}`, wantErr: `provider.data_collection: must be "allow" or "deny"`},

		{name: "enforce_distillable_text", provider: `{"enforce_distillable_text":true}`, want: Preferences{EnforceDistillableText: true}},
		{name: "zdr", provider: `{"zdr":true}`, want: Preferences{ZDR: true}},
		{name: "zdr number", provider: `{"zdr":1}`, wantErr: "provider.zdr: must be a boolean"},
		{name: "require_parameters", provider: `{"require_parameters":true}`, want: Preferences{RequireParameters: true}},

		{name: "lists", provider: `{"only":["openai","azure"],"ignore":["groq"],"order":["azure","openai"]}`,
			want: Preferences{Only: []string{"openai", "azure"}, Ignore: []string{"groq"}, Order: []string{"azure", "openai"}}},
		{name: "order dedupe keeps first", provider: `{"order":["b","a","B"," a "]}`, want: Preferences{Order: []string{"b", "a"}}},
		{name: "empty list is unset", provider: `{"only":[]}`, want: Preferences{}},
		{name: "order not array", provider: `{"order":"openai"}`, wantErr: "provider.order: must be an array of strings"},
		{name: "order item not string", provider: `{"order":["openai",3]}`, wantErr: "provider.order[1]: must be a non-empty string"},
		{name: "ignore empty string", provider: `{"ignore":[""]}`, wantErr: "provider.ignore[0]: must be a non-empty string"},
		{name: "quantizations lowered", provider: `{"quantizations":["FP8","int4"]}`, want: Preferences{Quantizations: []string{"fp8", "int4"}}},

		{name: "max_price strings and numbers", provider: `{"max_price":{"prompt":"1.5","completion":3,"request":"0","image":"1e-3","audio":0.25}}`,
			want: Preferences{MaxPrice: MaxPrice{Prompt: f64(1.5), Completion: f64(3), Request: f64(0), Image: f64(0.001), Audio: f64(0.25)}}},
		{name: "max_price null field", provider: `{"max_price":{"prompt":null}}`, want: Preferences{}},
		{name: "max_price negative", provider: `{"max_price":{"prompt":"-1"}}`, wantErr: "provider.max_price.prompt: must be a non-negative decimal"},
		{name: "max_price negative number", provider: `{"max_price":{"completion":-0.5}}`, wantErr: "provider.max_price.completion"},
		{name: "max_price garbage", provider: `{"max_price":{"prompt":"cheap"}}`, wantErr: "provider.max_price.prompt"},
		{name: "max_price NaN", provider: `{"max_price":{"prompt":"NaN"}}`, wantErr: "provider.max_price.prompt"},
		{name: "max_price Inf", provider: `{"max_price":{"prompt":"1e999"}}`, wantErr: "provider.max_price.prompt"},
		{name: "max_price hex", provider: `{"max_price":{"prompt":"0x10"}}`, wantErr: "provider.max_price.prompt"},
		{name: "max_price unknown key", provider: `{"max_price":{"tokens":"1"}}`, wantErr: "provider.max_price.tokens: unknown field"},
		{name: "max_price not object", provider: `{"max_price":"1"}`, wantErr: "provider.max_price: must be an object"},

		{name: "latency number is p50", provider: `{"preferred_max_latency":1.5}`, want: Preferences{PreferredMaxLatency: Percentiles{P50: 1.5}}},
		{name: "latency object", provider: `{"preferred_max_latency":{"p50":1,"p90":3,"p99":null}}`, want: Preferences{PreferredMaxLatency: Percentiles{P50: 1, P90: 3}}},
		{name: "throughput object", provider: `{"preferred_min_throughput":{"p75":50,"p99":10}}`, want: Preferences{PreferredMinThroughput: Percentiles{P75: 50, P99: 10}}},
		{name: "latency unknown percentile", provider: `{"preferred_max_latency":{"p95":1}}`, wantErr: "provider.preferred_max_latency.p95: unknown field"},
		{name: "latency negative", provider: `{"preferred_max_latency":-1}`, wantErr: "provider.preferred_max_latency: must be a non-negative number"},
		{name: "throughput string", provider: `{"preferred_min_throughput":"fast"}`, wantErr: "provider.preferred_min_throughput: must be a number or an object"},
		{name: "throughput p50 string", provider: `{"preferred_min_throughput":{"p50":"10"}}`, wantErr: "provider.preferred_min_throughput.p50"},

		{name: "sort string", provider: `{"sort":"price"}`, want: Preferences{Sort: SortPrice}},
		{name: "sort throughput", provider: `{"sort":"throughput"}`, want: Preferences{Sort: SortThroughput}},
		{name: "sort object", provider: `{"sort":{"by":"latency","partition":"none"}}`, want: Preferences{Sort: SortLatency, Partition: PartitionNone}},
		{name: "sort object model", provider: `{"sort":{"by":"price","partition":"model"}}`, want: Preferences{Sort: SortPrice, Partition: PartitionModel}},
		{name: "sort bad string", provider: `{"sort":"cheapest"}`, wantErr: `provider.sort: must be "price", "throughput" or "latency"`},
		{name: "sort object bad by", provider: `{"sort":{"by":"speed"}}`, wantErr: "provider.sort.by: must be"},
		{name: "sort object no by", provider: `{"sort":{"partition":"none"}}`, wantErr: "provider.sort.by: is required"},
		{name: "sort object bad partition", provider: `{"sort":{"by":"price","partition":"all"}}`, wantErr: `provider.sort.partition: must be "model" or "none"`},
		{name: "sort object unknown key", provider: `{"sort":{"by":"price","order":"desc"}}`, wantErr: "provider.sort.order: unknown field"},
		{name: "sort number", provider: `{"sort":1}`, wantErr: "provider.sort: must be a string or an object"},

		{name: "route fallback", route: `"fallback"`, want: Preferences{Partition: PartitionModel}},
		{name: "route sort", route: `"sort"`, want: Preferences{Partition: PartitionNone}},
		{name: "route sort with sort string", provider: `{"sort":"price"}`, route: `"sort"`, want: Preferences{Sort: SortPrice, Partition: PartitionNone}},
		{name: "explicit partition wins over route", provider: `{"sort":{"by":"price","partition":"model"}}`, route: `"sort"`, want: Preferences{Sort: SortPrice, Partition: PartitionModel}},
		{name: "route bad", route: `"cheapest"`, wantErr: `route: must be "fallback", "sort" or null`},
		{name: "route number", route: `1`, wantErr: "route: must be"},

		{name: "unknown key", provider: `{"speed":"fast"}`, wantErr: "provider.speed: unknown field"},
		{name: "unknown key null", provider: `{"speed":null}`, wantErr: "provider.speed: unknown field"},
		{name: "unknown key after valid", provider: `{"zdr":true,"allow_fallback":false}`, wantErr: "provider.allow_fallback: unknown field"},
		{name: "case matters", provider: `{"ZDR":true}`, wantErr: "provider.ZDR: unknown field"},
		{name: "provider not object", provider: `["openai"]`, wantErr: "provider: must be an object or null"},
		{name: "provider string", provider: `"openai"`, wantErr: "provider: must be an object or null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prov, route gjson.Result
			if tt.provider != "" {
				prov = gjson.Parse(tt.provider)
			}
			if tt.route != "" {
				route = gjson.Parse(tt.route)
			}
			got, err := ParsePreferences(prov, route)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("got %+v, want error %q", got, tt.wantErr)
				}
				if err.Status != 400 || !strings.Contains(err.Message, tt.wantErr) {
					t.Fatalf("got %d %q, want 400 containing %q", err.Status, err.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestParsePreferencesFromBody reads the fields the way the server will:
// from a whole request body.
func TestParsePreferencesFromBody(t *testing.T) {
	body := `{"model":"openai/gpt-4o","route":"sort","provider":{"sort":"throughput","zdr":true,"max_price":{"prompt":"2"}}}`
	p, err := ParsePreferences(gjson.Get(body, "provider"), gjson.Get(body, "route"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Sort != SortThroughput || p.Partition != PartitionNone || !p.ZDR || *p.MaxPrice.Prompt != 2 || !p.AllowFallbacks() {
		t.Fatalf("got %+v", p)
	}
}

func TestParsePreferencesLongKeyIsClipped(t *testing.T) {
	key := strings.Repeat("k", 1000)
	_, err := ParsePreferences(gjson.Parse(`{"`+key+`":1}`), gjson.Result{})
	if err == nil || len(err.Message) > 120 {
		t.Fatalf("got %v", err)
	}
}

func FuzzParsePreferences(f *testing.F) {
	seeds := []string{
		`{}`, `null`, `{"provider":null}`,
		`{"provider":{"allow_fallbacks":false,"data_collection":"deny","order":["a","b"],"only":["a"],"ignore":["c"]}}`,
		`{"provider":{"max_price":{"prompt":"1.5","completion":2,"request":"0","image":"1e-3","audio":null}}}`,
		`{"provider":{"preferred_max_latency":{"p50":1,"p99":3},"preferred_min_throughput":20}}`,
		`{"provider":{"sort":{"by":"price","partition":"none"},"quantizations":["fp8"]},"route":"fallback"}`,
		`{"provider":{"sort":"latency","zdr":true,"require_parameters":true,"enforce_distillable_text":true}}`,
		`{"provider":{"unknown":1}}`, `{"provider":[1,2]}`, `{"provider":{"order":[1]}}`, `{"route":7}`,
		`{"provider":{"max_price":{"prompt":"1e99999"}}}`, `{"provider":{"sort":{"by":`, `{"provider":{"order":["\u0000"]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		body := gjson.ParseBytes(data)
		for _, prov := range []gjson.Result{body.Get("provider"), body} {
			p, err := ParsePreferences(prov, body.Get("route"))
			if err != nil {
				if err.Status != 400 {
					t.Fatalf("status %d: %s", err.Status, err.Message)
				}
				continue
			}
			// A successful parse yields values the router accepts.
			if p.DataCollection != "" && p.DataCollection != "allow" && p.DataCollection != "deny" {
				t.Fatalf("data_collection %q", p.DataCollection)
			}
			switch p.Sort {
			case SortNone, SortPrice, SortThroughput, SortLatency:
			default:
				t.Fatalf("sort %q", p.Sort)
			}
			for _, f := range []*float64{p.MaxPrice.Prompt, p.MaxPrice.Completion, p.MaxPrice.Request, p.MaxPrice.Image, p.MaxPrice.Audio} {
				if f != nil && !(*f >= 0) {
					t.Fatalf("max_price %v", *f)
				}
			}
		}
	})
}
