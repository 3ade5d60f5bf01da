package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/ratelimit"
)

// rateLimits runs "key set-rate-limits" and "account set-rate-limits". The
// flags give the whole set: one left out is 0, unlimited (for an account:
// the configured default), so all zero clears them.
func (c *cli) rateLimits(cmd string, fs *flag.FlagSet, args []string) error {
	var l ratelimit.Limits
	fs.Int64Var(&l.RequestsPerMinute, "rpm", 0, "requests per minute (0 = unlimited)")
	fs.Int64Var(&l.TokensPerMinute, "tpm", 0, "tokens per minute, prompt and completion (0 = unlimited)")
	fs.Int64Var(&l.Concurrent, "concurrent", 0, "requests in flight at once (0 = unlimited)")
	if cmd == "account set-rate-limits" {
		acct := fs.String("account", "", "account id")
		if err := parse(fs, args, 0); err != nil {
			return err
		}
		if *acct == "" {
			return errors.New("account set-rate-limits: -account is required")
		}
		var set *ratelimit.Limits
		if l != (ratelimit.Limits{}) {
			set = &l
		}
		if err := c.ks.SetRateLimits(*acct, set); err != nil {
			if errors.Is(err, keys.ErrNoAccount) {
				return fmt.Errorf("account set-rate-limits: no account %q", *acct)
			}
			return fmt.Errorf("account set-rate-limits: %w", err)
		}
		return c.print(map[string]any{"account": *acct, "rate_limits": set}, func(w io.Writer) {
			fmt.Fprintf(w, "%s %s\n", *acct, describeLimits(l, "configured defaults"))
		})
	}
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	k, err := c.ks.Update(fs.Arg(0), func(k *keys.Key) error { k.RateLimits = l; return nil })
	if err != nil {
		return fmt.Errorf("key set-rate-limits: %w", err)
	}
	return c.print(map[string]any{"data": k}, func(w io.Writer) {
		fmt.Fprintf(w, "%s %s\n", k.Hash, describeLimits(k.RateLimits, "no key limits (the account's apply)"))
	})
}

func describeLimits(l ratelimit.Limits, none string) string {
	if l == (ratelimit.Limits{}) {
		return none
	}
	return fmt.Sprintf("requests_per_minute=%d tokens_per_minute=%d concurrent=%d (0 = unlimited)", l.RequestsPerMinute, l.TokensPerMinute, l.Concurrent)
}
