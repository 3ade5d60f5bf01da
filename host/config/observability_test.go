package config

import (
	"log/slog"
	"strings"
	"testing"
)

func TestObservabilityConfig(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		err        string
		check      func(t *testing.T, c *Config)
	}{
		{name: "defaults", check: func(t *testing.T, c *Config) {
			if c.Metrics.MetricsOff() || c.Metrics.Address() != DefaultMetricsListen || c.Metrics.Listen != "" {
				t.Errorf("metrics %+v", c.Metrics)
			}
			if c.Log.SlogLevel() != slog.LevelInfo || !c.Log.RequestLines() {
				t.Errorf("log %+v", c.Log)
			}
		}},
		{name: "set", yaml: "metrics: {listen: '0.0.0.0:9100'}\nlog: {level: debug, format: json, requests: false}\n", check: func(t *testing.T, c *Config) {
			if c.Metrics.Address() != "0.0.0.0:9100" || c.Log.SlogLevel() != slog.LevelDebug || c.Log.Format != "json" || c.Log.RequestLines() {
				t.Errorf("%+v %+v", c.Metrics, c.Log)
			}
		}},
		{name: "off", yaml: "metrics: {listen: 'off'}\n", check: func(t *testing.T, c *Config) {
			if !c.Metrics.MetricsOff() {
				t.Error("metrics not off")
			}
		}},
		{name: "env", env: map[string]string{"SWITCHYARD_METRICS_LISTEN": "off", "SWITCHYARD_LOG_LEVEL": "warn", "SWITCHYARD_LOG_FORMAT": "json"},
			check: func(t *testing.T, c *Config) {
				if !c.Metrics.MetricsOff() || c.Log.SlogLevel() != slog.LevelWarn || c.Log.Format != "json" {
					t.Errorf("%+v %+v", c.Metrics, c.Log)
				}
			}},
		{name: "pprof", yaml: "metrics: {pprof: true}\n", check: func(t *testing.T, c *Config) {
			if !c.Metrics.Pprof {
				t.Error("pprof not on")
			}
		}},
		{name: "pprof default off", check: func(t *testing.T, c *Config) {
			if c.Metrics.Pprof {
				t.Error("pprof on by default")
			}
		}},
		{name: "pprof env", env: map[string]string{"SWITCHYARD_METRICS_PPROF": "true"}, check: func(t *testing.T, c *Config) {
			if !c.Metrics.Pprof {
				t.Error("pprof not on")
			}
		}},
		{name: "bad pprof env", env: map[string]string{"SWITCHYARD_METRICS_PPROF": "yes please"}, err: "SWITCHYARD_METRICS_PPROF"},
		{name: "bad level", yaml: "log: {level: loud}\n", err: "log.level"},
		{name: "bad format", yaml: "log: {format: xml}\n", err: "log.format"},
		{name: "bad env level", env: map[string]string{"SWITCHYARD_LOG_LEVEL": "loud"}, err: "log.level"},
		{name: "typo", yaml: "metrics: {listn: x}\n", err: "listn"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("demo: false\n" + tc.yaml))
			if err == nil && tc.env != nil {
				err = c.observabilityEnv(func(k string) string { return tc.env[k] })
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
