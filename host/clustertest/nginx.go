// Package clustertest runs a Switchyard cluster for tests the way users run
// one: several gateway processes (the built binary) on one PostgreSQL and
// one Redis, behind nginx as the load balancer, each server a throwaway
// started on free loopback ports in a temporary directory and stopped at
// the end of the test.
package clustertest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nginx is a throwaway nginx balancing over gateways.
type Nginx struct {
	URL string
	dir string
	cmd *exec.Cmd
}

// nginxBinary finds Debian's nginx.
func nginxBinary() (string, error) {
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("nginx is not installed: run `make deps` (installs Debian's nginx, postgresql and redis-server)")
}

// FreePort returns a loopback port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartNginx starts nginx in front of upstreams (host:port), stopped at
// the end of the test. The configuration is what docs/deploy.md shows:
// unbuffered proxying so server-sent events stream through, HTTP/1.1 with
// keep-alive to the gateways, and a request passed to the next gateway
// only when it could not be sent (nginx never repeats a POST that reached
// a gateway, so nothing is charged twice).
func StartNginx(t testing.TB, upstreams []string) *Nginx {
	t.Helper()
	bin, err := nginxBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port := FreePort(t)
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=1 fail_timeout=2s;\n", u)
	}
	user := ""
	if os.Geteuid() == 0 {
		// The workers would switch to nobody, who cannot use the temporary
		// directory of a root test.
		user = "user root;"
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  upstream switchyard {
    least_conn;
%[3]s    keepalive 64;
  }
  server {
    listen 127.0.0.1:%[4]d;
    client_max_body_size 64m;
    location / {
      proxy_pass http://switchyard;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
    }
  }
}
`, user, dir, servers.String(), port)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path, "-p", dir, "-g", "daemon off;")
	logf, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &Nginx{URL: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir, cmd: cmd}
	t.Cleanup(n.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return n
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			s, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
			t.Fatalf("nginx did not start listening in 20 s: %s\n%s", s, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *Nginx) stop() {
	if n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	done := make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// waitHTTP polls url until it answers 200.
func waitHTTP(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 in %s (last error %v)", url, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
