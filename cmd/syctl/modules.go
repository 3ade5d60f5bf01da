package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/switchyard/switchyard/host/modules"
	"github.com/switchyard/switchyard/host/wasm"
)

// module runs the module commands. Publishing compiles and instantiates
// the module first, exactly as the gateway would, so a module that would be
// refused at start is refused here.
func (c *cli) module(cmd string, fs *flag.FlagSet, args []string) error {
	scope := fs.String("scope", "", "account id (default: the gateway-wide scope)")
	manifestPath := fs.String("manifest", "", "manifest JSON file (publish)")
	wasmPath := fs.String("wasm", "", "module binary (publish)")
	activate := fs.Bool("activate", false, "activate after publishing")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	engine := wasm.NewEngine(wasm.Config{CacheDir: c.cacheDir})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer engine.Close(ctx)
	reg, err := modules.Open(c.db, engine, nil)
	if err != nil {
		return err
	}
	switch cmd {
	case "module list":
		list := reg.List(*scope)
		return c.print(list, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tACTIVE\tSOURCE\tPUBLISHED\tSHA256")
			for _, m := range list {
				fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%.12s\n", m.Name, m.Version, m.Active, m.Source, m.Published.Format(time.RFC3339), m.SHA256)
			}
			_ = tw.Flush()
		})
	case "module publish":
		if *manifestPath == "" || *wasmPath == "" {
			return errUsage
		}
		mj, err := os.ReadFile(*manifestPath)
		if err != nil {
			return err
		}
		bin, err := os.ReadFile(*wasmPath)
		if err != nil {
			return err
		}
		publish := reg.PublishScoped
		if *activate {
			publish = reg.PublishAndActivate // one load for both
		}
		m, err := publish(ctx, *scope, mj, bin, "cli")
		if err != nil {
			return err
		}
		fmt.Fprintf(c.out, "published %s@%s (active: %t)\n", m.Name, m.Version, *activate)
		return nil
	case "module activate":
		if fs.NArg() != 2 {
			return errUsage
		}
		if err := reg.Activate(ctx, modules.Scoped(*scope, fs.Arg(0)), fs.Arg(1)); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "activated %s@%s\n", fs.Arg(0), fs.Arg(1))
		return nil
	case "module rollback":
		if fs.NArg() != 1 {
			return errUsage
		}
		v, err := reg.Rollback(ctx, modules.Scoped(*scope, fs.Arg(0)))
		if err != nil {
			return err
		}
		fmt.Fprintf(c.out, "rolled back %s to %s\n", fs.Arg(0), v)
		return nil
	case "module delete":
		// NAME deletes the whole module; NAME VERSION one version that is
		// not the active one.
		switch fs.NArg() {
		case 1:
			n, err := reg.DeleteModule(ctx, modules.Scoped(*scope, fs.Arg(0)))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.out, "deleted %s (%d versions)\n", fs.Arg(0), n)
			return nil
		case 2:
			if err := reg.DeleteVersion(modules.Scoped(*scope, fs.Arg(0)), fs.Arg(1)); err != nil {
				return err
			}
			fmt.Fprintf(c.out, "deleted %s@%s\n", fs.Arg(0), fs.Arg(1))
			return nil
		}
	}
	return errUsage
}
