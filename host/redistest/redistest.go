// Package redistest starts a throwaway redis-server for tests, the way
// net/http/httptest starts an HTTP server: on a free loopback port, in the
// test's temporary directory, with persistence off, stopped when the test
// ends. Stop and Start let a test take the server away and bring it back on
// the same port (an outage).
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process.
type Server struct {
	// Addr is host:port; URL is redis://Addr/0, what config's redis.url takes.
	Addr, URL string

	t    testing.TB
	dir  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches a redis-server and stops it when t ends. When
// redis-server is not installed the test fails (`make deps` installs it),
// unless SWITCHYARD_SKIP_REDIS=1 says to skip tests that need one.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("SWITCHYARD_SKIP_REDIS") == "1" {
			t.Skip("redis-server not installed and SWITCHYARD_SKIP_REDIS=1")
		}
		t.Fatal("redis-server not found: run `make deps` (installs it from Debian's packages), or set SWITCHYARD_SKIP_REDIS=1 to skip tests that need it")
	}
	s := &Server{t: t, dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		err := s.start()
		if err == nil {
			break
		}
		// Another process may take the port between freePort and the
		// server's bind; try another one a few times.
		if attempt == 4 {
			t.Fatalf("redistest: %v", err)
		}
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(s.port)
	s.URL = "redis://" + s.Addr + "/0"
	t.Cleanup(s.Stop)
	return s
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts the server again after Stop, on the same port, empty.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no", "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	// The server says it is ready on its log; keep the log for a failure.
	ready := make(chan struct{})
	var log strings.Builder
	var logMu sync.Mutex
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			if log.Len() < 1<<14 {
				log.WriteString(line + "\n")
			}
			logMu.Unlock()
			if strings.Contains(line, "Ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-ready:
	case <-done:
		logMu.Lock()
		defer logMu.Unlock()
		return fmt.Errorf("redis-server exited at start on port %d:\n%s", s.port, log.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redis-server not ready after 20 s on port %d", s.port)
	}
	s.cmd, s.done = cmd, done
	return nil
}

// Stop stops the server (SIGKILL: an outage, not a shutdown) and waits for
// it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// FlushAll empties the server.
func (s *Server) FlushAll() {
	s.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		s.t.Fatalf("redistest: FLUSHALL: %v", err)
	}
}
