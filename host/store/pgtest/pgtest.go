// Package pgtest starts throwaway PostgreSQL servers for tests: initdb
// into a temporary directory, postgres on a free loopback port, a fresh
// database per test, and everything stopped and removed at the end.
//
// The servers run with fsync=off (and synchronous_commit=off): a test's
// data need not survive a crash of the machine, and it makes initdb and
// every commit much faster. Never use these settings for a real database.
//
// initdb and postgres refuse to run as root. When the tests run as root
// (CI's Debian container, this machine) the server runs as the
// unprivileged user "postgres" (Debian's package creates it) or, if there
// is none, "switchyard-pg", created on the spot.
//
// PostgreSQL missing is a test failure that says to run `make deps`, not a
// silent skip; SWITCHYARD_SKIP_PG=1 skips the PostgreSQL tests instead,
// for a machine that cannot have it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotInstalled: no PostgreSQL server binaries on this machine.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed (no initdb found on PATH, in `pg_config --bindir` or /usr/lib/postgresql/*/bin): run `make deps`, or set SWITCHYARD_SKIP_PG=1 to skip the PostgreSQL tests")

// Skip reports whether SWITCHYARD_SKIP_PG asks to skip the PostgreSQL tests.
func Skip() bool { return os.Getenv("SWITCHYARD_SKIP_PG") == "1" }

// Server is one running PostgreSQL.
type Server struct {
	bin  string
	dir  string // the data directory, also the socket directory
	port int
	cred *syscall.Credential

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current postgres process has exited.
	exited chan struct{}
	// started: the server ran once; its port is in DSNs and stays.
	started bool
}

// superuser is the role initdb creates; tests connect as it.
const superuser = "switchyard"

var dbSeq atomic.Int64

// New starts a server for the test (or benchmark) t and stops it when t
// ends. It fails t if PostgreSQL is missing, unless SWITCHYARD_SKIP_PG=1.
func New(t testing.TB) *Server {
	t.Helper()
	if Skip() {
		t.Skip("SWITCHYARD_SKIP_PG=1: skipping the PostgreSQL tests")
	}
	s, err := Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server for t and returns the DSN of a fresh database on it.
func Start(t testing.TB) string {
	t.Helper()
	s := New(t)
	dsn, err := s.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Launch starts a server; Close stops and removes it. For TestMain, which
// has no testing.TB.
func Launch() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parent is root's and closed to the server's user.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	out, err := s.command("initdb", "-D", data, "-U", superuser, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// The server's own process group: a test interrupted by ^C does not
	// take it down mid-way; Close does. And if the test binary dies
	// without cleaning up (a -timeout panic, a kill), the server gets
	// SIGQUIT (immediate shutdown) instead of living on.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	return cmd
}

// Start (re)starts the server on its port and waits until it accepts
// connections. The first start picks a free port.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if s.port == 0 || attempt > 0 && !s.portFixed() {
			p, err := freePort()
			if err != nil {
				return err
			}
			s.port = p
		}
		if lastErr = s.startOnce(); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

// portFixed: once clients hold the DSN (after the first start), a restart
// must keep the port.
func (s *Server) portFixed() bool { return s.started }

func (s *Server) startOnce() error {
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := s.command("postgres", "-D", filepath.Join(s.dir, "data"), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(s.port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // its exit is seen through exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", tail(logPath))
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("pgtest: postgres did not accept connections in 30 s: %v\n%s", err, tail(logPath))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.cmd, s.exited, s.started = cmd, exited, true
	return nil
}

// Stop stops the server (fast shutdown: clients are disconnected).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.dir)
}

// DSN is the connection string of the database "postgres".
func (s *Server) DSN() string { return s.dsn("postgres") }

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, db)
}

// CreateDB creates a fresh, empty database and returns its DSN.
func (s *Server) CreateDB() (string, error) {
	return s.createDB("")
}

// CreateDBFrom creates a database that is a copy of the template database
// of dsn (one CreateDB returned, filled, and no longer connected to) and
// returns the copy's DSN. PostgreSQL copies the template's files: a test
// gateway then starts on a store already holding the first-party modules
// instead of writing their 65 MB through the protocol (and compressing
// them into TOAST) each time — seconds per gateway.
func (s *Server) CreateDBFrom(dsn string) (string, error) {
	template, err := dbName(dsn)
	if err != nil {
		return "", err
	}
	return s.createDB(template)
}

// DropDB drops the database of dsn (one CreateDB or CreateDBFrom
// returned), closing its connections: a suite that copies a database of
// some tens of MB per test keeps one at a time on disk, not hundreds.
func (s *Server) DropDB(dsn string) error {
	name, err := dbName(dsn)
	if err != nil {
		return err
	}
	if err := s.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database: %w", err)
	}
	return nil
}

func (s *Server) createDB(template string) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	q := "CREATE DATABASE " + name
	if template != "" {
		q += " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY FILE_COPY"
	}
	if err := s.exec(q); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.dsn(name), nil
}

// exec runs one statement on the server's database "postgres".
func (s *Server) exec(q string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

// dbName is the database a DSN of this server (s.dsn) names.
func dbName(dsn string) (string, error) {
	i := strings.LastIndexByte(dsn, '/')
	j := strings.IndexByte(dsn, '?')
	if i < 0 || j < i {
		return "", fmt.Errorf("pgtest: %q is not a DSN of this server", dsn)
	}
	return dsn[i+1 : j], nil
}

// NewDB is CreateDB for a test.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	dsn, err := s.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Where Debian puts each version's server binaries, and the tool that
// knows where they are (variables: the tests point them elsewhere).
var (
	debianBinDirs = "/usr/lib/postgresql/*/bin"
	pgConfig      = "pg_config"
)

// binDir finds PostgreSQL's server binaries.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command(pgConfig, "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob(debianBinDirs)
	// The newest version first (numerically: 9 < 10).
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(dir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
	return v
}

// credential is the unprivileged user the server runs as when we are
// root (nil otherwise).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		u, err = user.Lookup("switchyard-pg")
	}
	if err != nil {
		out, cerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "switchyard-pg").CombinedOutput()
		if cerr != nil && !strings.Contains(string(out), "already exists") {
			return nil, fmt.Errorf("pgtest: running as root, and no user to run PostgreSQL as (useradd switchyard-pg: %v: %s)", cerr, out)
		}
		if u, err = user.Lookup("switchyard-pg"); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
