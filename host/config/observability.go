package config

import (
	"fmt"
	"log/slog"
	"strings"
)

// DefaultMetricsListen is where /metrics is served when the configuration
// says nothing: loopback only (a scraper on the same host or a sidecar),
// the port OpenTelemetry's Prometheus exporters use. When that port is
// taken the gateway logs it and runs without metrics; an address the
// operator set must be free.
const DefaultMetricsListen = "127.0.0.1:9464"

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Listen is the address of the /metrics listener, apart from the API
	// port: "" means DefaultMetricsListen, "off" no metrics at all (and
	// none of their cost on the request path).
	Listen string `yaml:"listen"`
	// Pprof serves Go's profiles (net/http/pprof's /debug/pprof/) on the
	// same listener. Off by default: a profile shows the process's code
	// and timing, and a CPU profile costs while it runs, so it is for an
	// operator chasing a problem on a listener they control.
	Pprof bool `yaml:"pprof"`
}

// Log configures the gateway's log (stderr).
type Log struct {
	// Level is debug, info (default), warn or error. Request lines are
	// info (warn for 5xx answers).
	Level string `yaml:"level"`
	// Format is text (default, logfmt-like) or json.
	Format string `yaml:"format"`
	// Requests writes one line per API request (default true).
	Requests *bool `yaml:"requests"`
}

// MetricsOff reports whether metrics are switched off.
func (m Metrics) MetricsOff() bool { return strings.EqualFold(m.Listen, "off") }

// Address is the listen address, the default filled in.
func (m Metrics) Address() string {
	if m.Listen == "" {
		return DefaultMetricsListen
	}
	return m.Listen
}

// SlogLevel is Level as a slog level.
func (l Log) SlogLevel() slog.Level {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(l.levelOrDefault()))
	return lv
}

// RequestLines reports whether request lines are written.
func (l Log) RequestLines() bool { return l.Requests == nil || *l.Requests }

func (l Log) levelOrDefault() string {
	if l.Level == "" {
		return "info"
	}
	return l.Level
}

func (c *Config) checkObservability() error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.Log.levelOrDefault())); err != nil {
		return fmt.Errorf("config: log.level %q must be debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		return fmt.Errorf("config: log.format %q must be text or json", c.Log.Format)
	}
	return nil
}

// observabilityEnv applies SWITCHYARD_METRICS_LISTEN, SWITCHYARD_LOG_LEVEL
// and SWITCHYARD_LOG_FORMAT.
func (c *Config) observabilityEnv(getenv func(string) string) error {
	if v := getenv("SWITCHYARD_METRICS_LISTEN"); v != "" {
		c.Metrics.Listen = v
	}
	switch v := getenv("SWITCHYARD_METRICS_PPROF"); v {
	case "":
	case "1", "true":
		c.Metrics.Pprof = true
	case "0", "false":
		c.Metrics.Pprof = false
	default:
		return fmt.Errorf("SWITCHYARD_METRICS_PPROF: %q is not true or false", v)
	}
	if v := getenv("SWITCHYARD_LOG_LEVEL"); v != "" {
		c.Log.Level = v
	}
	if v := getenv("SWITCHYARD_LOG_FORMAT"); v != "" {
		c.Log.Format = v
	}
	return c.checkObservability()
}
