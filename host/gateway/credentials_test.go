package gateway_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/switchyard/switchyard/host/credentials/credtest"
	"github.com/switchyard/switchyard/host/demo"
	"github.com/switchyard/switchyard/host/gatewaytest"
)

// checked is an OpenAI-wire fake upstream (host/demo) behind a check of
// the credential, the way the cloud's front door does it: a refusal is
// the cloud's own error body and status.
func checked(t *testing.T, check func(r *http.Request, body []byte) error) string {
	return checkedAt(t, demo.New(), "/v1", check)
}

func checkedAt(t *testing.T, up http.Handler, prefix string, check func(r *http.Request, body []byte) error) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // a check may replace it
		if err := check(r, body); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"message":%q}`, err.Error())
			return
		}
		up.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + prefix
}

// TestProviderCredentialSchemes: a chat request reaches each kind of
// cloud provider with the credential the cloud checks — a SigV4
// signature recomputed from the secret (Bedrock's OpenAI-compatible
// endpoint), a service-account token from a token endpoint that checks
// the JWT (Vertex AI's OpenAI-compatible endpoint), Azure's api-key and
// an Entra ID token — and never with the adapter's own key header; a
// provider whose secret is wrong is an error that does not show it.
func TestProviderCredentialSchemes(t *testing.T) {
	const (
		akid      = "AKIAIOSFODNN7EXAMPLE"
		secret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		azureKey  = "azurekey0123456789abcdef01234567"
		adSecret  = "azure-client-secret-Q~0123456789abcdefghij"
		saEmail   = "gateway@switchyard-test.iam.gserviceaccount.com"
		wrongAWS  = "wrongSecretwrongSecretwrongSecretwrong00"
		region    = "us-west-2"
		noKeyHdrs = "no adapter key header"
	)
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": saEmail, "private_key_id": "k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
	saPath := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(saPath, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	google := credtest.NewTokenServer(time.Hour, time.Now)
	t.Cleanup(google.Close)
	google.PublicKey, google.Issuer, google.Scope = &key.PublicKey, saEmail, "https://www.googleapis.com/auth/cloud-platform"
	entra := credtest.NewTokenServer(time.Hour, time.Now)
	t.Cleanup(entra.Close)
	entra.ClientID, entra.ClientSecret, entra.Scope = "client-1", adSecret, "https://cognitiveservices.azure.com/.default"

	noKey := func(r *http.Request) error {
		if strings.Contains(r.Header.Get("Authorization"), "${") || r.URL.Query().Has("key") {
			return fmt.Errorf("%s: %v", noKeyHdrs, r.Header)
		}
		return nil
	}
	sigv4 := func(r *http.Request, body []byte) error {
		if r.Header.Get("Authorization") == "" {
			return fmt.Errorf("no signature")
		}
		return credtest.VerifySigV4(r, body, akid, secret, "", time.Now())
	}
	urls := map[string]string{
		"bedrock":     checked(t, sigv4),
		"bedrock-bad": checked(t, sigv4),
		"vertex": checked(t, func(r *http.Request, _ []byte) error {
			if r.Header.Get("x-goog-api-key") != "" {
				return fmt.Errorf("%s", noKeyHdrs)
			}
			return google.Check(r.Header.Get("Authorization"))
		}),
		// Gemini on Vertex AI: the Gemini adapter's paths under the
		// project's publisher URL, a bearer token instead of the key.
		"vertex-gemini": checkedAt(t, demo.NewGemini(), "/v1/projects/p1/locations/us-central1/publishers/google", func(r *http.Request, _ []byte) error {
			if r.Header.Get("x-goog-api-key") != "" || !strings.HasPrefix(r.URL.Path, "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-test:") {
				return fmt.Errorf("%s: %s %v", noKeyHdrs, r.URL.Path, r.Header)
			}
			return google.Check(r.Header.Get("Authorization"))
		}),
		// Azure's deployment URL and api-version (the classic API; the
		// v1 API is the same with /openai/v1 and no version).
		// Claude on Vertex AI: the model in the rawPredict URL, the
		// version in the body, a bearer token; then the Messages fake.
		"vertex-claude": checkedAt(t, demo.NewAnthropic(), "/v1/projects/p1/locations/us-east5/publishers/anthropic", func(r *http.Request, body []byte) error {
			const prefix = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-test@20250101:"
			method, ok := strings.CutPrefix(r.URL.Path, prefix)
			stream := gjson.GetBytes(body, "stream").Bool()
			if !ok || (method != "rawPredict" && method != "streamRawPredict") || (method == "streamRawPredict") != stream {
				return fmt.Errorf("not a Vertex Claude URL: %s", r.URL.Path)
			}
			if gjson.GetBytes(body, "anthropic_version").Str != "vertex-2023-10-16" || gjson.GetBytes(body, "model").Exists() || r.Header.Get("x-api-key") != "" {
				return fmt.Errorf("not a Vertex Claude body: %s", body)
			}
			if err := google.Check(r.Header.Get("Authorization")); err != nil {
				return err
			}
			// What Vertex hands to Claude: the Messages request.
			r.URL.Path = "/v1/messages"
			r.Header.Set("anthropic-version", "2023-06-01")
			r.Header.Set("x-api-key", "vertex")
			r.Body = io.NopCloser(strings.NewReader(`{"model":"claude-test",` + string(body[1:])))
			return nil
		}),
		"azure": checked(t, func(r *http.Request, _ []byte) error {
			if r.URL.Path != "/v1/openai/deployments/gpt-4o-dep/chat/completions" || r.URL.Query().Get("api-version") != "2024-10-21" {
				return fmt.Errorf("not a deployment URL with its api-version: %s", r.URL)
			}
			r.URL.Path = "/v1/chat/completions" // where the OpenAI-wire fake answers
			if r.Header.Get("api-key") != azureKey {
				return fmt.Errorf("Access denied due to invalid subscription key or wrong API endpoint.")
			}
			if r.Header.Get("Authorization") != "" {
				return fmt.Errorf("%s", noKeyHdrs)
			}
			return nil
		}),
		"azure-ad": checked(t, func(r *http.Request, _ []byte) error {
			if err := noKey(r); err != nil {
				return err
			}
			return entra.Check(r.Header.Get("Authorization"))
		}),
	}
	// An Azure deployment whose content filter acts, answering the
	// documented bodies (testdata/azure/SOURCES.md) by the prompt.
	promptFiltered, _ := os.ReadFile("testdata/azure/prompt_filtered.json")
	completionFiltered, _ := os.ReadFile("testdata/azure/completion_filtered.json")
	filter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("api-key") != azureKey:
			w.WriteHeader(http.StatusUnauthorized)
		case strings.Contains(string(body), "filtered prompt"):
			w.WriteHeader(http.StatusBadRequest)
			w.Write(promptFiltered)
		default:
			w.Write(completionFiltered)
		}
	}))
	t.Cleanup(filter.Close)
	urls["azure-filter"] = filter.URL + "/openai/v1"
	// Vertex AI's text embeddings: :predict under the publisher URL, with
	// the service account's token (plugins/gemini/testdata, api: vertex).
	vertexEmbed, _ := os.ReadFile("../../plugins/gemini/testdata/vertex_embed_response.json")
	multimodal, _ := os.ReadFile("../../plugins/gemini/testdata/vertex_multimodal_embed_response.json")
	predict := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case google.Check(r.Header.Get("Authorization")) != nil || noKey(r) != nil:
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v1/projects/p1/locations/us-central1/publishers/google/models/multimodalembedding@001:predict":
			status, answer := multimodalPredict(body, multimodal)
			w.WriteHeader(status)
			w.Write(answer)
		case r.URL.Path != "/v1/projects/p1/locations/us-central1/publishers/google/models/text-embedding-004:predict" || gjson.GetBytes(body, "instances.#").Int() != 2:
			w.WriteHeader(http.StatusNotFound)
		default:
			w.Write(vertexEmbed)
		}
	}))
	t.Cleanup(predict.Close)
	yml := fmt.Sprintf(`demo: false
timeouts: {attempt: 5s, request: 30s}
providers:
  - {slug: bedrock, adapter: openai, base_url: %q, auth: {scheme: aws-sigv4, region: %s}}
  - {slug: bedrock-bad, adapter: openai, base_url: %q, auth: {scheme: aws-sigv4, region: %s, secret_access_key_env: WRONG_SECRET}}
  - {slug: vertex, adapter: openai, base_url: %q, auth: {scheme: google-service-account, credentials_file: %q, token_url: %q}}
  - {slug: vertex-gemini, adapter: gemini, base_url: %q, auth: {scheme: google-service-account, credentials_file: %q, token_url: %q}}
  - {slug: vertex-claude, adapter: anthropic, api: vertex, base_url: %q, auth: {scheme: google-service-account, credentials_file: %q, token_url: %q}}
  - {slug: azure, adapter: openai, base_url: "%s/openai/deployments/gpt-4o-dep?api-version=2024-10-21", api_key_env: AZURE_OPENAI_API_KEY, auth: {scheme: azure-api-key}}
  - {slug: azure-filter, adapter: openai, base_url: %q, api_key_env: AZURE_OPENAI_API_KEY, auth: {scheme: azure-api-key}}
  - {slug: azure-ad, adapter: openai, base_url: %q, auth: {scheme: azure-ad, tenant_id: t1, client_id: client-1, token_url: %q}}
  - {slug: vertex-embed, adapter: gemini, api: vertex, base_url: "%s/v1/projects/p1/locations/us-central1/publishers/google", auth: {scheme: google-service-account, credentials_file: %q, token_url: %q}}
models:
  - {id: google/text-embedding-004, kind: embedding, endpoints: [{provider: vertex-embed, upstream_model: text-embedding-004, price: {prompt: 0.025}}]}
  - {id: google/multimodalembedding, kind: embedding, input_modalities: [text, image], endpoints: [{provider: vertex-embed, upstream_model: multimodalembedding@001, price: {prompt: 0.2}}]}
`, urls["bedrock"], region, urls["bedrock-bad"], region, urls["vertex"], saPath, google.URL, urls["vertex-gemini"], saPath, google.URL, urls["vertex-claude"], saPath, google.URL, urls["azure"], urls["azure-filter"], urls["azure-ad"], entra.URL, predict.URL, saPath, google.URL)
	for _, slug := range []string{"bedrock", "bedrock-bad", "vertex", "vertex-gemini", "vertex-claude", "azure", "azure-filter", "azure-ad"} {
		upstream := map[string]string{"vertex-gemini": "gemini-test", "vertex-claude": "claude-test@20250101"}[slug]
		if upstream == "" {
			upstream = "echo"
		}
		yml += fmt.Sprintf("  - {id: test/%s, endpoints: [{provider: %s, upstream_model: %s, price: {prompt: 1, completion: 2}}]}\n", slug, slug, upstream)
	}
	g, err := gatewaytest.Start(gatewaytest.Options{ConfigYAML: yml, Quiet: true, ConfigFile: true, Env: map[string]string{
		"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret, "WRONG_SECRET": wrongAWS,
		"AZURE_OPENAI_API_KEY": azureKey, "AZURE_CLIENT_SECRET": adSecret, "AZURE_CLIENT_SECRET_2": adSecret,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)

	for _, c := range []struct{ model, stream string }{
		{"test/bedrock", "false"}, {"test/bedrock", "true"}, {"test/vertex", "false"},
		{"test/vertex-gemini", "false"}, {"test/vertex-gemini", "true"},
		{"test/vertex-claude", "false"}, {"test/vertex-claude", "true"},
		{"test/azure", "false"}, {"test/azure-ad", "false"}, {"test/azure-ad", "true"},
	} {
		t.Run(c.model+" stream="+c.stream, func(t *testing.T) {
			resp, b, err := g.Request("POST", "/chat/completions",
				`{"model":"`+c.model+`","stream":`+c.stream+`,"messages":[{"role":"user","content":"hello there"}]}`)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %d %s", err, resp.StatusCode, b)
			}
			if c.stream == "false" && !strings.Contains(gjson.GetBytes(b, "choices.0.message.content").Str, "hello there") {
				t.Fatalf("answer: %s", b)
			}
			if c.stream == "true" && !strings.Contains(string(b), "[DONE]") {
				t.Fatalf("stream: %s", b)
			}
		})
	}
	// Each provider caches its own token (three providers, one file here).
	if n := google.Minted(); n != 3 {
		t.Fatalf("the service account's tokens were minted %d times for five requests to three providers, want three (cached)", n)
	}
	if n := entra.Minted(); n != 1 {
		t.Fatalf("the Entra ID token was minted %d times for two requests, want once (cached)", n)
	}
	// A reload that leaves a provider's credentials as they were keeps its
	// scheme and the token it holds; one that changes them (here the
	// Entra ID client secret's variable) builds a new one.
	reloaded := strings.Replace(yml, "client_id: client-1,", "client_id: client-1, client_secret_env: AZURE_CLIENT_SECRET_2,", 1)
	if err := g.WriteConfig(reloaded); err != nil {
		t.Fatal(err)
	}
	if _, err := g.GW.Reload("test"); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"test/vertex", "test/vertex-gemini", "test/vertex-claude", "test/azure-ad"} {
		if resp, b, err := g.Request("POST", "/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"after the reload"}]}`); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s after a reload: %v %d %s", model, err, resp.StatusCode, b)
		}
	}
	if n := google.Minted(); n != 3 {
		t.Fatalf("after a reload that changed nothing of theirs, the service account's tokens were minted %d times in all, want still three", n)
	}
	if n := entra.Minted(); n != 2 {
		t.Fatalf("after a reload that changed its secret's variable, the Entra ID token was minted %d times in all, want twice", n)
	}

	resp, b, err := g.Request("POST", "/embeddings", `{"model":"google/text-embedding-004","input":["What is life?","hello"],"dimensions":3}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.#").Int() != 2 || gjson.GetBytes(b, "data.1.embedding.0").Float() != -0.027141398 || gjson.GetBytes(b, "usage.prompt_tokens").Int() != 10 {
		t.Fatalf("vertex embeddings: %v %d %s", err, resp.StatusCode, b)
	}

	// Vertex AI's multimodal embeddings: an image and a text, each its
	// own instance, each answered in order with its own vector; an item
	// mixing them is refused by the adapter before any call (an adapter's
	// refusal is a 502 naming the module, as for any adapter).
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"google/multimodalembedding","dimensions":128,"input":[`+
		`{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},{"content":[{"type":"text","text":"Colosseum"}]}]}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "data.#").Int() != 2 ||
		gjson.GetBytes(b, "data.0.embedding.0").Float() != -0.0123147098 || gjson.GetBytes(b, "data.1.embedding.0").Float() != 0.00230263756 ||
		gjson.GetBytes(b, "usage.prompt_tokens").Int() == 0 {
		t.Fatalf("vertex multimodal embeddings: %v %d %s", err, resp.StatusCode, b)
	}
	resp, b, err = g.Request("POST", "/embeddings", `{"model":"google/multimodalembedding","input":[{"content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"gs://b/cat.png"}}]}]}`)
	if err != nil || resp.StatusCode == 200 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "two input items") {
		t.Fatalf("vertex multimodal embeddings of a mixed item: %v %d %s", err, resp.StatusCode, b)
	}

	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"test/bedrock-bad","messages":[{"role":"user","content":"hi"}]}`)
	if err != nil || resp.StatusCode == 200 || gjson.GetBytes(b, "error.message").Str == "" {
		t.Fatalf("a provider refusing the signature: %v %d %s", err, resp.StatusCode, b)
	}
	for _, s := range []string{wrongAWS, secret, wrongAWS[:12]} {
		if strings.Contains(string(b), s) {
			t.Fatalf("the response shows a secret: %s", b)
		}
	}

	// Azure's content filter: a filtered answer is finish_reason
	// content_filter (not an empty "stop"), a filtered prompt a 400 that
	// says why.
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"test/azure-filter","messages":[{"role":"user","content":"a filtered answer"}]}`)
	if err != nil || resp.StatusCode != 200 || gjson.GetBytes(b, "choices.0.finish_reason").Str != "content_filter" {
		t.Fatalf("a filtered completion: %v %d %s", err, resp.StatusCode, b)
	}
	resp, b, err = g.Request("POST", "/chat/completions", `{"model":"test/azure-filter","messages":[{"role":"user","content":"a filtered prompt"}]}`)
	if err != nil || resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(b, "error.message").Str, "content management policy") {
		t.Fatalf("a filtered prompt: %v %d %s", err, resp.StatusCode, b)
	}
}

// multimodalPredict answers a multimodalembedding :predict request as
// Vertex AI does (plugins/gemini/testdata/vertex_multimodal_embed_response.json,
// the multimodal-embeddings reference): one prediction per instance, an
// imageEmbedding for an image, a textEmbedding for a text, after checking
// that each instance holds exactly one of them, that an image is base64
// bytes with a PNG or JPEG media type or a Cloud Storage URI, and that a
// dimension is one the model offers. A bad request is Vertex's 400.
func multimodalPredict(body, reference []byte) (int, []byte) {
	image, text := gjson.GetBytes(reference, "predictions.0.imageEmbedding").Raw, gjson.GetBytes(reference, "predictions.1.textEmbedding").Raw
	bad := `{"error":{"code":400,"message":"Invalid instance","status":"INVALID_ARGUMENT"}}`
	if d := gjson.GetBytes(body, "parameters.dimension"); d.Exists() && !strings.Contains(" 128 256 512 1408 ", " "+d.Raw+" ") {
		return http.StatusBadRequest, []byte(bad)
	}
	var preds []string
	ok := true
	gjson.GetBytes(body, "instances").ForEach(func(_, in gjson.Result) bool {
		img, txt := in.Get("image"), in.Get("text")
		switch {
		case img.Exists() == txt.Exists():
			ok = false
		case txt.Exists():
			preds = append(preds, `{"textEmbedding":`+text+`}`)
		case img.Get("gcsUri").Exists() || img.Get("bytesBase64Encoded").Exists() && (img.Get("mimeType").Str == "image/png" || img.Get("mimeType").Str == "image/jpeg"):
			preds = append(preds, `{"imageEmbedding":`+image+`}`)
		default:
			ok = false
		}
		return ok
	})
	if !ok || len(preds) == 0 {
		return http.StatusBadRequest, []byte(bad)
	}
	return http.StatusOK, []byte(`{"predictions":[` + strings.Join(preds, ",") + `],"deployedModelId":"DEPLOYED_MODEL_ID"}`)
}
