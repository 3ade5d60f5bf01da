package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchyard/switchyard/host/activity"
)

// generations and activity are GET /generations and GET /activity from the
// operator's shell, for any account (docs/api.md).
func (c *cli) activityCommand(cmd string, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("syctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	acct := fs.String("account", "", "account id")
	from := fs.String("from", "", "start: RFC 3339 time or date (YYYY-MM-DD)")
	to := fs.String("to", "", "end: RFC 3339 time (exclusive) or date (inclusive)")
	if cmd == "activity" {
		by := fs.String("group-by", "", "model, key or app (default: model and key)")
		if err := parse(fs, args, 0); err != nil {
			return err
		}
		if _, err := c.ks.Account(*acct); err != nil {
			return fmt.Errorf("activity: no account %q", *acct)
		}
		return c.activity(*acct, *from, *to, *by)
	}
	f := activity.Filter{}
	fs.StringVar(&f.Key, "key", "", "key hash")
	fs.StringVar(&f.Model, "model", "", "model id")
	fs.StringVar(&f.Provider, "provider", "", "provider slug")
	fs.StringVar(&f.Status, "status", "", "success, error, cancelled, interrupted or expired")
	limit := fs.Int("limit", activity.DefaultLimit, "records per page (at most 500)")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if _, err := c.ks.Account(*acct); err != nil {
		return fmt.Errorf("generations: no account %q", *acct)
	}
	if f.Status != "" && !slices.Contains(activity.Statuses, f.Status) {
		return fmt.Errorf("generations: -status must be one of %s", strings.Join(activity.Statuses, ", "))
	}
	if *limit < 1 || *limit > activity.MaxLimit {
		return fmt.Errorf("generations: -limit must be from 1 to %d", activity.MaxLimit)
	}
	var err error
	if f.From, err = activity.ParseTime(*from, false); err != nil {
		return fmt.Errorf("generations: -from: %w", err)
	}
	if f.To, err = activity.ParseTime(*to, true); err != nil {
		return fmt.Errorf("generations: -to: %w", err)
	}
	page, err := activity.List(c.db, *acct, f, *cursor, *limit)
	if err != nil {
		return fmt.Errorf("generations: %w", err)
	}
	return c.print(map[string]any{"data": page.Data, "next_cursor": page.Next}, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tMODEL\tPROVIDER\tSTATUS\tTOKENS\tCOST\tLATENCY")
		for _, g := range page.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d+%d\t%s\t%dms\n", g.ID, g.CreatedAt.UTC().Format(time.RFC3339), g.Model, g.Provider,
				g.Status, g.Usage.PromptTokens, g.Usage.CompletionTokens, g.Charged, g.LatencyMs)
		}
		_ = tw.Flush()
		if page.Next != "" {
			fmt.Fprintf(w, "more: -cursor %s\n", page.Next)
		}
	})
}

func (c *cli) activity(acct, from, to, by string) error {
	end := time.Now().UTC().Truncate(24 * time.Hour)
	if to != "" {
		t, err := time.Parse(time.DateOnly, to)
		if err != nil {
			return fmt.Errorf("activity: -to must be a date (2026-01-02)")
		}
		end = t
	}
	start := end.AddDate(0, 0, -29)
	if from != "" {
		t, err := time.Parse(time.DateOnly, from)
		if err != nil {
			return fmt.Errorf("activity: -from must be a date (2026-01-02)")
		}
		start = t
	}
	group := activity.ByModelAndKey
	switch by {
	case "":
	case "model":
		group = activity.ByModel
	case "key":
		group = activity.ByKey
	case "app":
		group = activity.ByApp
	default:
		return fmt.Errorf("activity: -group-by must be model, key or app")
	}
	rows, err := activity.Activity(c.db, acct, start.Format(time.DateOnly), end.Format(time.DateOnly), group)
	if err != nil {
		return fmt.Errorf("activity: %w", err)
	}
	return c.print(map[string]any{"data": rows}, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if group == activity.ByApp {
			fmt.Fprintln(tw, "DATE\tHTTP_REFERER\tAPP_TITLE\tREQUESTS\tPROMPT\tCOMPLETION\tCOST")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%q\t%q\t%d\t%d\t%d\t%s\n", r.Date, r.HTTPReferer, r.AppTitle, r.Requests, r.PromptTokens, r.CompletionTokens, r.Cost)
			}
			_ = tw.Flush()
			return
		}
		fmt.Fprintln(tw, "DATE\tMODEL\tKEY\tREQUESTS\tPROMPT\tCOMPLETION\tCOST")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.Date, r.Model, r.Key, r.Requests, r.PromptTokens, r.CompletionTokens, r.Cost)
		}
		_ = tw.Flush()
	})
}
