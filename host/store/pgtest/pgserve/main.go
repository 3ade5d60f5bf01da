// Command pgserve runs a throwaway PostgreSQL (host/store/pgtest) until it
// is interrupted, and prints the DSN of a fresh database on it: the
// cluster-mode benchmark (scripts/peerbench-postgres.sh) runs the gateway
// on it. fsync is off: never keep data in it.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard/switchyard/host/store/pgtest"
)

func main() {
	s, err := pgtest.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgserve:", err)
		os.Exit(1)
	}
	defer s.Close()
	dsn, err := s.CreateDB()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgserve:", err)
		return
	}
	fmt.Println(dsn)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
