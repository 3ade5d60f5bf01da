package main

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// The plugin commands that talk to a running gateway's management API
// (docs/api.md, "Modules") with a management key: publish, activate,
// rollback and logs. Unlike the rest of syctl they need no store file:
// --url (or SWITCHYARD_URL, default http://127.0.0.1:8080/api/v1) and
// --key (or SWITCHYARD_KEY).

type remote struct {
	url, key, scope string
	client          *http.Client
}

func remoteFlags(fs *flag.FlagSet) *remote {
	// Longer than the gateway gives a publish (two minutes), so its answer,
	// with the reason, arrives before this gives up.
	r := &remote{client: &http.Client{Timeout: 3 * time.Minute}}
	fs.StringVar(&r.url, "url", cmp.Or(os.Getenv("SWITCHYARD_URL"), "http://127.0.0.1:8080/api/v1"), "the gateway's API base URL")
	fs.StringVar(&r.key, "key", os.Getenv("SWITCHYARD_KEY"), "a management key (default $SWITCHYARD_KEY)")
	fs.StringVar(&r.scope, "scope", "account", "account (the key's account) or global (the operator's key only)")
	return r
}

// do sends a request and returns the response's data member, or an error
// carrying the gateway's status and message.
func (r *remote) do(method, path string, body []byte) (json.RawMessage, error) {
	if r.key == "" {
		return nil, fmt.Errorf("no key: give --key or set SWITCHYARD_KEY")
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(r.url, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &env)
	if resp.StatusCode >= 300 {
		msg := env.Error.Message
		if msg == "" {
			msg = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("%d: %s", resp.StatusCode, msg)
	}
	return env.Data, nil
}

// pluginRemote runs publish, activate, rollback and logs.
func pluginRemote(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syctl plugin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	r := remoteFlags(fs)
	manifestPath := fs.String("manifest", "", "publish: the module's manifest (default: MODULE.json, or manifest.json beside MODULE.wasm)")
	activate := fs.Bool("activate", false, "publish: activate the version once published")
	follow := fs.Bool("follow", false, "logs: keep printing new lines (every 2 s) until interrupted")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	want := map[string]int{"publish": 1, "activate": 2, "rollback": 1, "logs": 1}[cmd]
	if len(pos) != want {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	scopeBody := func(extra string) []byte {
		return []byte(`{"scope":` + quote(r.scope) + extra + `}`)
	}
	var data json.RawMessage
	switch cmd {
	case "publish":
		if *manifestPath == "" {
			*manifestPath = defaultManifest(pos[0])
		}
		mf, err := os.ReadFile(*manifestPath)
		if err != nil {
			fmt.Fprintf(stderr, "syctl: the manifest: %v (give it with --manifest)\n", err)
			return 1
		}
		bin, err := os.ReadFile(pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "syctl:", err)
			return 1
		}
		body, err := json.Marshal(map[string]any{"manifest": json.RawMessage(mf), "wasm": base64.StdEncoding.EncodeToString(bin),
			"scope": r.scope, "activate": *activate})
		if err != nil {
			fmt.Fprintf(stderr, "syctl: the manifest is not JSON: %v\n", err)
			return 1
		}
		data, err = r.do("POST", "/modules", body)
		if err != nil {
			fmt.Fprintln(stderr, "syctl: publish:", err)
			return 1
		}
	case "activate":
		data, err = r.do("POST", "/modules/"+url.PathEscape(pos[0])+"/activate", scopeBody(`,"version":`+quote(pos[1])))
	case "rollback":
		data, err = r.do("POST", "/modules/"+url.PathEscape(pos[0])+"/rollback", scopeBody(""))
	case "logs":
		return r.logs(pos[0], *follow, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "syctl: %s: %v\n", cmd, err)
		return 1
	}
	fmt.Fprintln(stdout, string(data))
	return 0
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type logLine struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Module  string    `json:"module"`
	Message string    `json:"message"`
}

// logs prints the lines the gateway kept of module name (the last 200 on
// the gateway that answers), and with follow keeps printing new ones.
func (r *remote) logs(name string, follow bool, stdout, stderr io.Writer) int {
	var last time.Time
	seen := map[string]bool{} // lines of the last instant, printed already
	for {
		data, err := r.do("GET", "/modules/"+url.PathEscape(name)+"/logs?scope="+url.QueryEscape(r.scope), nil)
		if err != nil {
			fmt.Fprintln(stderr, "syctl: logs:", err)
			return 1
		}
		var lines []logLine
		if err := json.Unmarshal(data, &lines); err != nil {
			fmt.Fprintln(stderr, "syctl: logs:", err)
			return 1
		}
		for _, l := range lines {
			k := l.Module + "\x00" + l.Message
			if l.Time.Before(last) || l.Time.Equal(last) && seen[k] {
				continue
			}
			if l.Time.After(last) {
				last, seen = l.Time, map[string]bool{}
			}
			seen[k] = true
			fmt.Fprintf(stdout, "%s %-5s %s: %s\n", l.Time.Format(time.RFC3339Nano), l.Level, l.Module, l.Message)
		}
		if !follow {
			return 0
		}
		time.Sleep(2 * time.Second)
	}
}
