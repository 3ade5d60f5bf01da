package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/switchyard/switchyard/host/keys"
)

// responseCache runs "account set-response-cache" and "key
// set-response-cache": the response cache's default options for every
// request of an account or of one key (docs/response-cache.md, "Turning it
// on"; the management API's PUT /accounts/:id/response_cache). syctl
// works on the store without the gateway's modules, so it checks that the
// options are a JSON object without "id"; the gateway checks them against
// the cache plugin's config_schema on each request (a 400 that names the
// default), as the API does when they are set.
func (c *cli) responseCache(cmd string, fs *flag.FlagSet, args []string) error {
	opts := fs.String("options", "", `the cache plugin's options, a JSON object: '{"mode":"semantic","ttl":600}'; '{"enabled":false}' turns an account's default off for a key`)
	none := fs.Bool("none", false, "remove the default")
	acct := ""
	if cmd == "account set-response-cache" {
		fs.StringVar(&acct, "account", "", "account id")
	}
	n := 1
	if cmd == "account set-response-cache" {
		n = 0
	}
	if err := parse(fs, args, n); err != nil || (*opts == "") == !*none {
		return errUsage
	}
	var raw json.RawMessage
	if !*none {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*opts), &m); err != nil {
			return fmt.Errorf("%s: -options must be a JSON object: %w", cmd, err)
		}
		if _, ok := m["id"]; ok {
			return fmt.Errorf("%s: -options: leave out id (the account's cache plugin runs)", cmd)
		}
		raw, _ = json.Marshal(m)
	}
	shown := "none"
	if raw != nil {
		shown = string(raw)
	}
	if cmd == "account set-response-cache" {
		if acct == "" {
			return errors.New("account set-response-cache: -account is required")
		}
		if err := c.ks.SetResponseCache(acct, raw); err != nil {
			if errors.Is(err, keys.ErrNoAccount) {
				return fmt.Errorf("%s: no account %q", cmd, acct)
			}
			return fmt.Errorf("%s: %w", cmd, err)
		}
		return c.print(map[string]any{"account": acct, "response_cache": raw}, func(w io.Writer) {
			fmt.Fprintf(w, "%s response_cache=%s\n", acct, shown)
		})
	}
	k, err := c.ks.SetKeyResponseCache(fs.Arg(0), raw)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return c.print(map[string]any{"hash": k.Hash, "response_cache": raw}, func(w io.Writer) {
		fmt.Fprintf(w, "%s response_cache=%s\n", k.Hash, shown)
	})
}
