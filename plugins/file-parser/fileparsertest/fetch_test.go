//go:build !wasip1

package fileparsertest

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/host/config"
	"github.com/switchyard/switchyard/host/gatewaytest"
	"github.com/tidwall/gjson"
)

// pdfServer is an https server on loopback serving the test PDFs in the
// ways a file server can: typed, untyped, as HTML, through redirects.
func pdfServer(t testing.TB) *httptest.Server {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(gatewaytest.Root(), "plugins", "file-parser", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	groff, scan := read("groff.pdf"), read("scan-img2pdf.pdf")
	mux := http.NewServeMux()
	mux.HandleFunc("/groff.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(groff)
	})
	mux.HandleFunc("/scan.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(scan)
	})
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(groff)
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body>not a pdf</body></html>"))
	})
	mux.HandleFunc("/big.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.4\n"))
		w.Write(make([]byte, 300<<10))
	})
	mux.HandleFunc("/missing.pdf", http.NotFound)
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/groff.pdf", http.StatusFound)
	})
	mux.HandleFunc("/to-http", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/groff.pdf", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// trusting is a gateway whose modules may reach srv (a loopback address,
// granted in modules.private_hosts) and trust its certificate
// (modules.http.root_cas); max_response_bytes is 256 KiB.
func trusting(t testing.TB, srv *httptest.Server, trustCA bool) *gatewaytest.Gateway {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startVision(t, `{vision: {model: test/vision}}`, func(c *config.Config) {
		c.Modules.PrivateHosts = []string{strings.TrimPrefix(srv.URL, "https://")}
		c.Modules.HTTP.MaxResponseBytes = 256 << 10
		if trustCA {
			c.Modules.HTTP.RootCAs = []string{ca}
		}
	})
	return g
}

// A file given by https URL is fetched through the host (redirects
// followed and checked again, an untyped PDF accepted) and parsed like a
// data URL — with pdf-text, vision and native; anything that is not a
// PDF at an https address the gateway may reach is a 400 naming the file.
func TestFileParserFetchesHTTPS(t *testing.T) {
	srv := pdfServer(t)
	g := trusting(t, srv, true)
	up := g.Upstreams["alpha"]
	ok := []struct{ path, plugin, want string }{
		{"/groff.pdf", `{"id":"file-parser","pdf":{"engine":"pdf-text"}}`, "third quarter, with a median latency"},
		{"/moved", `{"id":"file-parser"}`, "third quarter, with a median latency"},
		{"/untyped", `{"id":"file-parser"}`, "third quarter, with a median latency"},
		{"/scan.pdf", vision, "Fragile glass: total weight 2,340 kg"},
	}
	for _, tc := range ok {
		t.Run(tc.path, func(t *testing.T) {
			status, body := post(t, g, fileRequest("remote.pdf", srv.URL+tc.path, tc.plugin))
			if status != 200 {
				t.Fatalf("%d %s", status, body.Raw)
			}
			if text := gjson.GetBytes(up.Last().Body, "messages.0.content.1.text").Str; !strings.Contains(text, tc.want) {
				t.Fatalf("upstream got %q", text)
			}
			st := body.Get(`service_metadata.pipeline.#(name=="file-parser")`)
			if st.Get("data.fetched").Int() != 1 || len(body.Get(`choices.0.message.annotations.0.file.hash`).Str) != 64 {
				t.Fatalf("%s", body.Raw)
			}
		})
	}
	t.Run("native inlines", func(t *testing.T) {
		status, body := post(t, g, fileRequest("remote.pdf", srv.URL+"/groff.pdf", `{"id":"file-parser","pdf":{"engine":"native"}}`))
		if status != 200 {
			t.Fatalf("%d %s", status, body.Raw)
		}
		part := gjson.ParseBytes(up.Last().Body).Get("messages.0.content.1")
		if part.Get("type").Str != "file" || part.Get("file.file_data").Str != dataURL(t, "groff.pdf") {
			t.Fatalf("upstream got %.300s", part.Raw)
		}
	})

	bad := []struct{ url, reason, want string }{
		{srv.URL + "/page.html", "unsupported", "text/html, not a PDF"},
		{srv.URL + "/missing.pdf", "fetch_failed", "HTTP 404"},
		{srv.URL + "/big.pdf", "too_large", "size limit"},
		{srv.URL + "/to-http", "insecure_url", "plain http"},
		{srv.URL + "/loop", "fetch_failed", "redirects more than 3 times"},
		{strings.Replace(srv.URL, "https://", "http://", 1) + "/groff.pdf", "insecure_url", "plain http"},
		// Another loopback port: not the operator's private host.
		{"https://127.0.0.1:1/groff.pdf", "fetch_denied", "may not fetch"},
		{"https://169.254.169.254/latest/meta-data", "fetch_denied", "may not fetch"},
	}
	for _, tc := range bad {
		t.Run(tc.url, func(t *testing.T) {
			before := up.Count()
			status, body := post(t, g, fileRequest("remote.pdf", tc.url, `{"id":"file-parser"}`))
			msg := body.Get("error.message").Str
			if status != 400 || body.Get("error.metadata.reason").Str != tc.reason || !strings.Contains(msg, "remote.pdf") || !strings.Contains(msg, tc.want) {
				t.Fatalf("%d %s", status, body.Raw)
			}
			if up.Count() != before {
				t.Fatal("the upstream was called")
			}
		})
	}
}

// Without modules.http.root_cas the test server's certificate is not
// trusted: the fetch fails with a 400 that says why, and the native
// engine does not hand the URL on either.
func TestFileParserFetchUntrustedCertificate(t *testing.T) {
	srv := pdfServer(t)
	g := trusting(t, srv, false)
	for _, plugin := range []string{`{"id":"file-parser"}`, `{"id":"file-parser","pdf":{"engine":"native"}}`} {
		status, body := post(t, g, fileRequest("remote.pdf", srv.URL+"/groff.pdf", plugin))
		if status != 400 || body.Get("error.metadata.reason").Str != "fetch_failed" || !strings.Contains(body.Get("error.message").Str, "certificate") {
			t.Fatalf("%s: %d %s", plugin, status, body.Raw)
		}
	}
}

// A root_cas entry that is not a readable PEM certificate stops the
// gateway at start, naming the setting, rather than trusting nothing new.
func TestRootCAsConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bad, filepath.Join(t.TempDir(), "missing.pem")} {
		g, err := gatewaytest.Start(gatewaytest.Options{Quiet: true, Mutate: func(c *config.Config) { c.Modules.HTTP.RootCAs = []string{f} }})
		if err == nil {
			g.Close()
			t.Fatalf("%s: the gateway started", f)
		}
		if !strings.Contains(err.Error(), "modules.http.root_cas") {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
