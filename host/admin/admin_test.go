package admin

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
	"github.com/tidwall/gjson"
)

type fixture struct {
	base   string
	ks     *keys.Store
	l      *billing.Ledger
	mgmt   string // management key of account A
	user   string // ordinary key of account A
	other  string // management key of account B
	acctA  string
	userK  *keys.Key
	otherK *keys.Key
}

// start serves the admin routes on 127.0.0.1:0 behind a minimal auth
// middleware like the gateway's: Bearer secret → keys.Authenticate →
// c.Locals("key").
func start(t *testing.T) *fixture {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "sy.db"))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := billing.Open(db, billing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ks: ks, l: l}
	a, _ := ks.CreateAccount("a")
	b, _ := ks.CreateAccount("b")
	f.acctA = a.ID
	f.mgmt, _, _ = ks.CreateKey(a.ID, "admin", "", true)
	limit := int64(2 * billing.NanosPerUSD)
	f.user, f.userK, _ = ks.Create(a.ID, keys.Options{Name: "app", Limit: &limit, LimitReset: keys.ResetMonthly})
	f.other, f.otherK, _ = ks.CreateKey(b.ID, "b-admin", "", true)
	if _, err := l.TopUp(a.ID, 5*billing.NanosPerUSD, "seed"); err != nil {
		t.Fatal(err)
	}

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	v1 := app.Group("/api/v1", func(c *fiber.Ctx) error {
		h := c.Get("Authorization")
		secret, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			secret = ""
		}
		k, aerr := ks.Authenticate(secret)
		if aerr != nil {
			return Fail(c, aerr.Status, aerr.Message)
		}
		c.Locals("key", k)
		return c.Next()
	})
	Register(v1, Deps{Keys: ks, Ledger: l})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() {
		_ = app.ShutdownWithTimeout(5 * time.Second)
		_ = l.Close()
		_ = db.Close()
	})
	f.base = "http://" + ln.Addr().String() + "/api/v1"
	return f
}

func (f *fixture) do(t *testing.T, method, path, secret, body string) (int, gjson.Result) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !gjson.ValidBytes(b) {
		t.Fatalf("%s %s: invalid JSON %q", method, path, b)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

type tcase struct {
	name         string
	method, path string
	secret       string
	body         string
	status       int
	check        func(t *testing.T, r gjson.Result) // optional
}

func (f *fixture) run(t *testing.T, cases []tcase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, r := f.do(t, tc.method, tc.path, tc.secret, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, r.Raw)
			}
			if status >= 400 && (r.Get("error.code").Int() != int64(status) || r.Get("error.message").String() == "") {
				t.Fatalf("bad error envelope: %s", r.Raw)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func want(t *testing.T, r gjson.Result, path, value string) {
	t.Helper()
	if got := r.Get(path); got.String() != value && got.Raw != value {
		t.Fatalf("%s = %s, want %s in %s", path, got.Raw, value, r.Raw)
	}
}

const forbidden = "Only management keys can perform this operation"

func isForbidden(t *testing.T, r gjson.Result) { want(t, r, "error.message", forbidden) }

func TestAuthAndPermissions(t *testing.T) {
	f := start(t)
	h := f.userK.Hash
	var cases []tcase
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/keys", ""}, {"POST", "/keys", `{"name":"x"}`}, {"GET", "/keys/" + h, ""},
		{"PATCH", "/keys/" + h, `{"name":"x"}`}, {"DELETE", "/keys/" + h, ""}, {"POST", "/credits", `{"amount":1}`},
	} {
		cases = append(cases,
			tcase{ep.method + " " + ep.path + " no key", ep.method, ep.path, "", ep.body, 401,
				func(t *testing.T, r gjson.Result) { want(t, r, "error.message", "Missing Authentication header") }},
			tcase{ep.method + " " + ep.path + " bad key", ep.method, ep.path, "sk-sy-v1-not-a-real-key-000000", ep.body, 401, nil},
			tcase{ep.method + " " + ep.path + " ordinary key", ep.method, ep.path, f.user, ep.body, 403, isForbidden},
		)
	}
	for _, p := range []string{"/key", "/credits", "/generation?id=x"} {
		cases = append(cases, tcase{"GET " + p + " no key", "GET", p, "", "", 401, nil})
	}
	f.run(t, cases)
}

func TestKeyEndpoints(t *testing.T) {
	f := start(t)
	// A key of account A to mutate, one of account B to stay invisible.
	_, victim, _ := f.ks.CreateKey(f.acctA, "victim", "", false)
	delSecret, del, _ := f.ks.CreateKey(f.acctA, "doomed", "", false)
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	f.run(t, []tcase{
		{"GET /key own", "GET", "/key", f.user, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.name", "app")
			want(t, r, "data.limit", "2")
			want(t, r, "data.limit_remaining", "2")
			want(t, r, "data.limit_reset", "monthly")
			want(t, r, "data.usage", "0")
			want(t, r, "data.is_management_key", "false")
		}},
		{"list", "GET", "/keys", f.mgmt, "", 200, func(t *testing.T, r gjson.Result) {
			if n := r.Get("data.#").Int(); n != 4 {
				t.Fatalf("%d keys listed, want account A's 4: %s", n, r.Raw)
			}
			if strings.Contains(r.Raw, f.otherK.Hash) {
				t.Fatal("another account's key listed")
			}
		}},
		{"list paged", "GET", "/keys?offset=1&limit=2", f.mgmt, "", 200, func(t *testing.T, r gjson.Result) { want(t, r, "data.#", "2") }},
		{"list bad offset", "GET", "/keys?offset=-1", f.mgmt, "", 400, nil},
		{"list bad include_disabled", "GET", "/keys?include_disabled=maybe", f.mgmt, "", 400, nil},
		{"create", "POST", "/keys", f.mgmt, `{"name":"ci","limit":2.5,"limit_reset":"daily","expires_at":"` + future + `"}`, 201,
			func(t *testing.T, r gjson.Result) {
				want(t, r, "data.limit", "2.5")
				want(t, r, "data.limit_reset", "daily")
				if !strings.HasPrefix(r.Get("key").String(), keys.Prefix) {
					t.Fatalf("no secret: %s", r.Raw)
				}
				if k, aerr := f.ks.Authenticate(r.Get("key").String()); aerr != nil || k.AccountID != f.acctA || k.Hash != r.Get("data.hash").String() {
					t.Fatalf("created key does not authenticate: %v", aerr)
				}
			}},
		{"create minimal", "POST", "/keys", f.mgmt, `{"name":"plain"}`, 201, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.limit", "null")
			want(t, r, "data.limit_reset", "null")
		}},
		{"create bad JSON", "POST", "/keys", f.mgmt, `{"name":`, 400, nil},
		{"create not an object", "POST", "/keys", f.mgmt, `[1]`, 400, nil},
		{"create no name", "POST", "/keys", f.mgmt, `{"limit":1}`, 400, func(t *testing.T, r gjson.Result) { want(t, r, "error.message", "name: required") }},
		{"create empty name", "POST", "/keys", f.mgmt, `{"name":""}`, 400, nil},
		{"create unknown field", "POST", "/keys", f.mgmt, `{"name":"x","colour":"red"}`, 400, func(t *testing.T, r gjson.Result) { want(t, r, "error.message", "colour: unknown field") }},
		{"create negative limit", "POST", "/keys", f.mgmt, `{"name":"x","limit":-1}`, 400, nil},
		{"create string limit", "POST", "/keys", f.mgmt, `{"name":"x","limit":"5"}`, 400, nil},
		{"create bad reset", "POST", "/keys", f.mgmt, `{"name":"x","limit_reset":"yearly"}`, 400, nil},
		{"create past expiry", "POST", "/keys", f.mgmt, `{"name":"x","expires_at":"2001-01-01T00:00:00Z"}`, 400, nil},
		{"create bad expiry", "POST", "/keys", f.mgmt, `{"name":"x","expires_at":"tomorrow"}`, 400, nil},
		{"get", "GET", "/keys/" + victim.Hash, f.mgmt, "", 200, func(t *testing.T, r gjson.Result) { want(t, r, "data.name", "victim") }},
		{"get unknown", "GET", "/keys/deadbeef", f.mgmt, "", 404, nil},
		{"get other account's", "GET", "/keys/" + f.userK.Hash, f.other, "", 404, nil},
		{"patch", "PATCH", "/keys/" + victim.Hash, f.mgmt, `{"name":"renamed","limit":1,"limit_reset":"weekly"}`, 200,
			func(t *testing.T, r gjson.Result) {
				want(t, r, "data.name", "renamed")
				want(t, r, "data.limit", "1")
				want(t, r, "data.limit_reset", "weekly")
				if r.Get("data.updated_at").Type == gjson.Null {
					t.Fatal("updated_at not set")
				}
			}},
		{"patch clear limit", "PATCH", "/keys/" + victim.Hash, f.mgmt, `{"limit":null,"limit_reset":null}`, 200,
			func(t *testing.T, r gjson.Result) {
				want(t, r, "data.limit", "null")
				want(t, r, "data.limit_reset", "null")
				want(t, r, "data.name", "renamed")
			}},
		{"patch disable", "PATCH", "/keys/" + del.Hash, f.mgmt, `{"disabled":true}`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.disabled", "true")
			if _, aerr := f.ks.Authenticate(delSecret); aerr == nil {
				t.Fatal("disabled key still authenticates")
			}
		}},
		{"list hides disabled", "GET", "/keys", f.mgmt, "", 200, func(t *testing.T, r gjson.Result) {
			if strings.Contains(r.Raw, del.Hash) {
				t.Fatal("disabled key listed")
			}
		}},
		{"list include_disabled", "GET", "/keys?include_disabled=true", f.mgmt, "", 200, func(t *testing.T, r gjson.Result) {
			if !strings.Contains(r.Raw, del.Hash) {
				t.Fatal("disabled key not listed")
			}
		}},
		{"patch unknown", "PATCH", "/keys/deadbeef", f.mgmt, `{"name":"x"}`, 404, nil},
		{"patch other account's", "PATCH", "/keys/" + victim.Hash, f.other, `{"disabled":true}`, 404, nil},
		{"patch bad JSON", "PATCH", "/keys/" + victim.Hash, f.mgmt, `nope`, 400, nil},
		{"patch bad type", "PATCH", "/keys/" + victim.Hash, f.mgmt, `{"disabled":"yes"}`, 400, nil},
		{"patch management flag", "PATCH", "/keys/" + victim.Hash, f.mgmt, `{"management":true}`, 400, nil},
		{"delete other account's", "DELETE", "/keys/" + del.Hash, f.other, "", 404, nil},
		{"delete", "DELETE", "/keys/" + del.Hash, f.mgmt, "", 200, func(t *testing.T, r gjson.Result) { want(t, r, "data.deleted", "true"); want(t, r, "deleted", "true") }},
		{"delete again", "DELETE", "/keys/" + del.Hash, f.mgmt, "", 404, nil},
		{"get deleted", "GET", "/keys/" + del.Hash, f.mgmt, "", 404, nil},
	})
}

func TestCreditsAndGeneration(t *testing.T) {
	f := start(t)
	// One settled request on the ordinary key of account A.
	r, aerr := f.l.Reserve(f.userK, billing.Request{ID: "gen-abc", Model: "acme/m", Provider: "p", Price: catalog.Price{Prompt: 1, Completion: 2},
		PromptTokens: 1000, MaxOutputTokens: 1000})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, err := r.Settle(billing.Outcome{Usage: billing.Usage{PromptTokens: 1000, CompletionTokens: 250}, FinishReason: "stop"}); err != nil {
		t.Fatal(err)
	}
	f.run(t, []tcase{
		{"credits", "GET", "/credits", f.user, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.total_credits", "5")
			want(t, r, "data.total_usage", "0.0015")
			want(t, r, "data.balance", "4.9985")
		}},
		{"key usage", "GET", "/key", f.user, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.usage", "0.0015")
			want(t, r, "data.usage_monthly", "0.0015")
			want(t, r, "data.limit_remaining", "1.9985")
		}},
		{"top up", "POST", "/credits", f.mgmt, `{"amount":10.25,"note":"invoice 7"}`, 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.total_credits", "15.25")
			want(t, r, "data.balance", "15.2485")
		}},
		{"top up tiny", "POST", "/credits", f.mgmt, `{"amount":1e-3}`, 200, func(t *testing.T, r gjson.Result) { want(t, r, "data.total_credits", "15.251") }},
		{"top up zero", "POST", "/credits", f.mgmt, `{"amount":0}`, 400, nil},
		{"top up negative", "POST", "/credits", f.mgmt, `{"amount":-5}`, 400, nil},
		{"top up string", "POST", "/credits", f.mgmt, `{"amount":"10"}`, 400, nil},
		{"top up missing", "POST", "/credits", f.mgmt, `{}`, 400, nil},
		{"top up unknown field", "POST", "/credits", f.mgmt, `{"amount":1,"account":"x"}`, 400, nil},
		{"top up bad JSON", "POST", "/credits", f.mgmt, `{`, 400, nil},
		{"other account unaffected", "GET", "/credits", f.other, "", 200, func(t *testing.T, r gjson.Result) { want(t, r, "data.total_credits", "0") }},
		{"generation", "GET", "/generation?id=gen-abc", f.user, "", 200, func(t *testing.T, r gjson.Result) {
			want(t, r, "data.id", "gen-abc")
			want(t, r, "data.total_cost", "0.0015")
			want(t, r, "data.model", "acme/m")
			want(t, r, "data.provider_name", "p")
			want(t, r, "data.finish_reason", "stop")
			want(t, r, "data.status", "success")
			want(t, r, "data.tokens.completion_tokens", "250")
			// OpenRouter's fields (issue 32): usage is the cost.
			want(t, r, "data.usage", "0.0015")
			want(t, r, "data.tokens_completion", "250")
			want(t, r, "data.native_tokens_completion", "250")
			want(t, r, "data.native_finish_reason", "stop")
			want(t, r, "data.is_byok", "false")
			want(t, r, "data.upstream_id", "")
		}},
		{"generation same account other key", "GET", "/generation?id=gen-abc", f.mgmt, "", 200, nil},
		{"generation other account", "GET", "/generation?id=gen-abc", f.other, "", 404, nil},
		{"generation unknown", "GET", "/generation?id=gen-nope", f.user, "", 404, nil},
		{"generation no id", "GET", "/generation", f.user, "", 400, nil},
	})
}
