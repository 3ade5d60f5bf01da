// Command syctl administers a Switchyard store file directly: accounts,
// keys, credits and generation records. It opens the bbolt file, so run it
// while the gateway is stopped (bbolt allows one process at a time); against
// a running gateway use the HTTP management API (docs/api.md) instead.
//
//	syctl -db PATH account create -name NAME
//	syctl -db PATH account list
//	syctl -db PATH key create -account ID -name NAME [-management] [-limit USD] [-reset daily|weekly|monthly] [-expires RFC3339]
//	syctl -db PATH key list [-account ID] [-all]
//	syctl -db PATH key show|disable|enable|delete HASH
//	syctl -db PATH key set-rate-limits [-rpm N] [-tpm N] [-concurrent N] HASH
//	syctl -db PATH account set-rate-limits -account ID [-rpm N] [-tpm N] [-concurrent N]
//	syctl -db PATH credits topup -account ID -amount USD [-note TEXT]
//	syctl -db PATH credits show -account ID
//	syctl -db PATH generation show ID
//	syctl -db PATH generations -account ID [-key HASH] [-model ID] [-provider SLUG] [-status S] [-from T] [-to T] [-limit N] [-cursor C]
//	syctl -db PATH activity -account ID [-from DATE] [-to DATE] [-group-by model|key|app]
//	syctl -db PATH account set-log-content -account ID -on|-off
//	syctl -db PATH account set-store-content -account ID -on|-off|-default
//	syctl -db PATH account set-response-cache -account ID -options JSON|-none
//	syctl -db PATH key set-response-cache HASH -options JSON|-none
//	syctl -db PATH audit
//	syctl -db PATH prune -older-than 90d [-batch N]
//	syctl -db PATH module list [-scope ACCOUNT]
//	syctl -db PATH module publish -manifest FILE -wasm FILE [-scope ACCOUNT] [-activate]
//	syctl -db PATH module activate [-scope ACCOUNT] NAME VERSION
//	syctl -db PATH module rollback [-scope ACCOUNT] NAME
//	syctl -db PATH module delete [-scope ACCOUNT] NAME [VERSION]
//	syctl migrate -to postgres://… [-from FILE] [-force]
//	syctl plugin new NAME --lang go|c [--dir DIR] [--sdk CHECKOUT]
//	syctl plugin test [--manifest FILE] [--cases DIR] MODULE.wasm
//	syctl plugin publish|activate|rollback|logs …   (a running gateway, --url and --key)
//
// -db defaults to $SWITCHYARD_DB and must name an existing store (the gateway
// creates it on first start); -create makes a new, empty one. Module
// commands keep compiled code in -cache (default: wazero-cache beside the
// store, which is where the gateway keeps it), so publishing a module the
// gateway or syctl compiled before does not compile it again. Opening the
// ledger runs crash recovery.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchyard/switchyard/host/activity"
	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
	"github.com/switchyard/switchyard/host/store"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: syctl [-db PATH|postgres://…] [-create] [-cache DIR] [-json] COMMAND ...

commands:
  account create -name NAME
  account list
  key create -account ID -name NAME [-management] [-limit USD] [-reset daily|weekly|monthly] [-expires RFC3339]
  key list [-account ID] [-all]
  key show|disable|enable|delete HASH
  key set-rate-limits [-rpm N] [-tpm N] [-concurrent N] HASH
  account set-rate-limits -account ID [-rpm N] [-tpm N] [-concurrent N]
  credits topup -account ID -amount USD [-note TEXT]
  credits show -account ID
  generation show ID
  generations -account ID [-key HASH] [-model ID] [-provider SLUG] [-status S] [-from T] [-to T] [-limit N] [-cursor C]
  activity -account ID [-from DATE] [-to DATE] [-group-by model|key|app]
  account set-log-content -account ID -on|-off
  account set-store-content -account ID -on|-off|-default   (store prompts and completions for GET /generation/content)
  account set-response-cache -account ID -options JSON|-none (the response cache's default for the account's requests)
  key set-response-cache HASH -options JSON|-none            (the same for one key, over its account's)
  audit
  prune -older-than 90d [-batch N]   (delete generation records older than that; totals stay)
  module list [-scope ACCOUNT]
  module publish -manifest FILE -wasm FILE [-scope ACCOUNT] [-activate]
  module activate [-scope ACCOUNT] NAME VERSION
  module rollback [-scope ACCOUNT] NAME
  module delete [-scope ACCOUNT] NAME [VERSION]   (a version that is not active, or the whole module)
  plugin new NAME --lang go|c [--dir DIR] [--sdk CHECKOUT]   (no -db: a ready plugin project; make builds it, make test checks it)
  plugin test [--manifest FILE] [--cases DIR] MODULE.wasm   (no -db: the ABI conformance check of a module, every declared hook on typical and 64 KiB+ inputs, then recorded cases)
  plugin publish [--manifest FILE] [--activate] MODULE.wasm | activate NAME VERSION | rollback NAME | logs [--follow] NAME
        (no -db: a running gateway's management API, --url (SWITCHYARD_URL) and --key (SWITCHYARD_KEY), --scope account|global)
  migrate -to postgres://… [-from FILE] [-force]   (schema; copy a bbolt store into PostgreSQL)

-db defaults to $SWITCHYARD_DB, then $SWITCHYARD_STORE_DSN; a bbolt file must exist
unless -create is given; a postgres:// DSN names a cluster's shared store.
-cache is the compilation cache of module commands (default: wazero-cache
beside the store, shared with the gateway). Run syctl while the gateway is stopped.
`

// errUsage makes run print the usage and exit 2.
var errUsage = errors.New("usage")

type cli struct {
	db       store.DB
	cacheDir string // compiled modules
	out      io.Writer
	asJSON   bool
	ks       *keys.Store
	l        *billing.Ledger
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	dbPath := fs.String("db", cmp.Or(os.Getenv("SWITCHYARD_DB"), os.Getenv("SWITCHYARD_STORE_DSN")), "path of the bbolt store file, or the postgres://… DSN of a cluster's store")
	create := fs.Bool("create", false, "create the store file when it does not exist")
	cacheDir := fs.String("cache", "", "compilation cache directory (default: wazero-cache beside the store)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if rest[0] == "migrate" { // migrate.go: PostgreSQL, not the -db file
		return runMigrate(rest[1:], stdout, stderr)
	}
	if rest[0] == "plugin" { // plugin.go: no store
		return runPlugin(rest[1:], stdout, stderr)
	}
	if *dbPath == "" {
		fmt.Fprintln(stderr, "syctl: -db (or SWITCHYARD_DB, or SWITCHYARD_STORE_DSN) is required")
		return 2
	}
	// bbolt creates a missing file: a mistyped path would silently give an
	// empty store, and commands would report "no account" instead of the
	// real mistake.
	shared := strings.HasPrefix(*dbPath, "postgres://") || strings.HasPrefix(*dbPath, "postgresql://")
	if _, err := os.Stat(*dbPath); !shared && errors.Is(err, iofs.ErrNotExist) && !*create {
		fmt.Fprintf(stderr, "syctl: store %s does not exist (check -db or SWITCHYARD_DB; the gateway creates it on first start, or pass -create for a new empty store)\n", *dbPath)
		return 1
	}
	if *cacheDir == "" && shared {
		*cacheDir = filepath.Join(os.TempDir(), "syctl-wazero-cache")
	} else if *cacheDir == "" {
		*cacheDir = filepath.Join(filepath.Dir(*dbPath), "wazero-cache")
	}
	var db store.DB
	var err error
	if shared {
		// A cluster's store: syctl is one more instance while it runs
		// (docs/cluster.md).
		db, err = store.Open(store.Config{Driver: "postgres", DSN: *dbPath}, "")
	} else {
		db, err = store.OpenBolt(*dbPath)
	}
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	defer db.Close()
	ks, err := keys.Open(db)
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	// Records that recovery settles are indexed like the gateway's.
	if err := activity.Open(db); err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	l, err := billing.Open(db, activity.Indexing(billing.Options{}))
	if err != nil {
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	defer l.Close()
	c := &cli{db: db, cacheDir: *cacheDir, out: stdout, asJSON: *asJSON, ks: ks, l: l}
	if err := c.dispatch(rest, stderr); err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, usage)
			return 2
		}
		fmt.Fprintln(stderr, "syctl:", err)
		return 1
	}
	return 0
}

func (c *cli) dispatch(args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	if args[0] == "audit" {
		return c.audit()
	}
	if args[0] == "prune" { // prune.go
		return c.prune(args[1:], stderr)
	}
	if args[0] == "generations" || args[0] == "activity" { // activity.go
		return c.activityCommand(args[0], args[1:], stderr)
	}
	if len(args) < 2 {
		return errUsage
	}
	cmd, rest := args[0]+" "+args[1], args[2:]
	fs := flag.NewFlagSet("syctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch cmd {
	case "module list", "module publish", "module activate", "module rollback", "module delete":
		return c.module(cmd, fs, rest)
	case "key set-rate-limits", "account set-rate-limits":
		return c.rateLimits(cmd, fs, rest)
	case "key set-response-cache", "account set-response-cache":
		return c.responseCache(cmd, fs, rest)
	case "account create":
		name := fs.String("name", "", "account name")
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		if strings.TrimSpace(*name) == "" {
			return errors.New("account create: -name is required")
		}
		a, err := c.ks.CreateAccount(*name)
		if err != nil {
			return err
		}
		return c.print(a, func(w io.Writer) { fmt.Fprintln(w, a.ID) })
	case "account list":
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		as, err := c.ks.Accounts()
		if err != nil {
			return err
		}
		type row struct {
			*keys.Account
			Balance   billing.Nanos `json:"balance"`
			Available billing.Nanos `json:"available"`
		}
		rows := make([]row, len(as))
		for i, a := range as {
			b := c.l.Balance(a.ID)
			rows[i] = row{a, b.Balance, b.Available}
		}
		return c.print(rows, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tBALANCE\tCREATED")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Balance, r.Created.Format(time.RFC3339))
			}
			tw.Flush()
		})
	case "key create":
		acct := fs.String("account", "", "account id")
		name := fs.String("name", "", "key name")
		mgmt := fs.Bool("management", false, "create a management key")
		limit := fs.String("limit", "", "credit limit in dollars (default: none)")
		reset := fs.String("reset", "", "limit reset period: daily, weekly or monthly (default: none)")
		expires := fs.String("expires", "", "expiry, RFC 3339 (default: never)")
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		if *acct == "" || *name == "" {
			return errors.New("key create: -account and -name are required")
		}
		if _, err := c.ks.Account(*acct); err != nil {
			return fmt.Errorf("key create: no account %q", *acct)
		}
		o := keys.Options{Name: *name, Management: *mgmt, LimitReset: *reset}
		if *limit != "" {
			n, err := billing.ParseUSD(*limit)
			if err != nil || n < 0 {
				return fmt.Errorf("key create: -limit %q is not a non-negative dollar amount", *limit)
			}
			v := int64(n)
			o.Limit = &v
		}
		if *expires != "" {
			t, err := time.Parse(time.RFC3339, *expires)
			if err != nil {
				return fmt.Errorf("key create: -expires: %v", err)
			}
			o.Expires = t
		}
		secret, k, err := c.ks.Create(*acct, o)
		if err != nil {
			return err
		}
		return c.print(map[string]any{"key": secret, "data": k}, func(w io.Writer) {
			fmt.Fprintf(w, "%s\nhash %s (the secret above is shown only once)\n", secret, k.Hash)
		})
	case "key list":
		acct := fs.String("account", "", "only this account's keys")
		all := fs.Bool("all", false, "include disabled keys")
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		ks, err := c.ks.List(*acct, *all)
		if err != nil {
			return err
		}
		return c.print(ks, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HASH\tNAME\tACCOUNT\tMGMT\tDISABLED\tLIMIT\tRESET\tUSAGE")
			for _, k := range ks {
				lim := "-"
				if k.Limit != nil {
					lim = billing.Nanos(*k.Limit).String()
				}
				reset := k.LimitReset
				if reset == "" {
					reset = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%t\t%s\t%s\t%s\n", k.Hash, k.Name, k.AccountID, k.Management,
					k.Disabled, lim, reset, c.l.KeyUsage(k).Total)
			}
			tw.Flush()
		})
	case "key show", "key disable", "key enable", "key delete":
		if err := parse(fs, rest, 1); err != nil {
			return err
		}
		hash := fs.Arg(0)
		var k *keys.Key
		var err error
		switch args[1] {
		case "show":
			k, err = c.ks.Get(hash)
		case "disable", "enable":
			k, err = c.ks.SetDisabled(hash, args[1] == "disable")
		case "delete":
			if err = c.ks.Delete(hash); err == nil {
				return c.print(map[string]any{"hash": hash, "deleted": true}, func(w io.Writer) { fmt.Fprintln(w, "deleted", hash) })
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		u := c.l.KeyUsage(k)
		return c.print(map[string]any{"data": k, "usage": u.Total}, func(w io.Writer) {
			fmt.Fprintf(w, "%s %q account=%s management=%t disabled=%t usage=%s\n", k.Hash, k.Name, k.AccountID, k.Management, k.Disabled, u.Total)
		})
	case "credits topup":
		acct := fs.String("account", "", "account id")
		amount := fs.String("amount", "", "dollars to add")
		note := fs.String("note", "syctl top-up", "note recorded with the top-up")
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		if _, err := c.ks.Account(*acct); err != nil {
			return fmt.Errorf("credits topup: no account %q", *acct)
		}
		n, err := billing.ParseUSD(*amount)
		if err != nil || n <= 0 {
			return fmt.Errorf("credits topup: -amount %q is not a positive dollar amount", *amount)
		}
		b, err := c.l.TopUp(*acct, n, *note)
		if err != nil {
			return err
		}
		return c.printBalance(*acct, b)
	case "credits show":
		acct := fs.String("account", "", "account id")
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		if _, err := c.ks.Account(*acct); err != nil {
			return fmt.Errorf("credits show: no account %q", *acct)
		}
		return c.printBalance(*acct, c.l.Balance(*acct))
	case "account set-log-content":
		acct := fs.String("account", "", "account id")
		on := fs.Bool("on", false, "log the account's prompts and completions")
		off := fs.Bool("off", false, "stop logging them (the default)")
		if err := parse(fs, rest, 0); err != nil || *on == *off {
			return errUsage
		}
		if err := c.ks.SetLogContent(*acct, *on); err != nil {
			return fmt.Errorf("account set-log-content: %w", err)
		}
		return c.print(map[string]any{"account": *acct, "log_content": *on}, func(w io.Writer) {
			fmt.Fprintf(w, "%s log_content=%t\n", *acct, *on)
		})
	case "account set-store-content":
		acct := fs.String("account", "", "account id")
		on := fs.Bool("on", false, "store the account's prompts and completions")
		off := fs.Bool("off", false, "store none of them")
		def := fs.Bool("default", false, "follow the operator's content.store again")
		if err := parse(fs, rest, 0); err != nil || b2i(*on)+b2i(*off)+b2i(*def) != 1 {
			return errUsage
		}
		var v *bool
		if !*def {
			v = on
		}
		if err := c.ks.SetStoreContent(*acct, v); err != nil {
			return fmt.Errorf("account set-store-content: %w", err)
		}
		shown := "default"
		if v != nil {
			shown = fmt.Sprint(*v)
		}
		return c.print(map[string]any{"account": *acct, "store_content": v}, func(w io.Writer) {
			fmt.Fprintf(w, "%s store_content=%s\n", *acct, shown)
		})
	case "generation show":
		if err := parse(fs, rest, 1); err != nil {
			return err
		}
		g, err := c.l.Generation(fs.Arg(0))
		if err != nil {
			return fmt.Errorf("generation show: %w", err)
		}
		return c.print(g, func(w io.Writer) {
			fmt.Fprintf(w, "%s %s via %s: %s, %d+%d tokens, charged %s\n", g.ID, g.Model, g.Provider, g.Status,
				g.Usage.PromptTokens, g.Usage.CompletionTokens, g.Charged)
		})
	}
	return errUsage
}

// parse parses flags and requires exactly positional positional arguments.
func parse(fs *flag.FlagSet, args []string, positional int) error {
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() != positional {
		return errUsage
	}
	return nil
}

func (c *cli) printBalance(acct string, b billing.Balance) error {
	v := map[string]any{"account": acct, "total_credits": b.Credits, "total_usage": b.Usage, "balance": b.Balance, "reserved": b.Held, "available": b.Available}
	return c.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "%s credits=%s usage=%s balance=%s reserved=%s\n", acct, b.Credits, b.Usage, b.Balance, b.Held)
	})
}

func (c *cli) audit() error {
	problems, err := c.l.Audit()
	if err != nil {
		return err
	}
	// Anomalies do not fail the audit: the books balance, but an upstream
	// reported more usage than a request authorised (not charged).
	anomalies, err := c.l.Anomalies()
	if err != nil {
		return err
	}
	if err := c.print(map[string]any{"ok": len(problems) == 0, "problems": problems, "upstream_anomalies": anomalies}, func(w io.Writer) {
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		if len(problems) == 0 {
			fmt.Fprintln(w, "ledger consistent")
		}
		for _, a := range anomalies {
			fmt.Fprintln(w, "upstream anomaly:", a)
		}
	}); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("audit: %d problems", len(problems))
	}
	return nil
}

func (c *cli) print(v any, text func(io.Writer)) error {
	if c.asJSON {
		e := json.NewEncoder(c.out)
		e.SetIndent("", "  ")
		return e.Encode(v)
	}
	text(c.out)
	return nil
}

// b2i counts a set flag.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
