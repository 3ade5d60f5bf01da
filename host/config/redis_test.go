package config

import (
	"strings"
	"testing"
)

func TestRedisURL(t *testing.T) {
	env := map[string]string{"REDIS_PASSWORD": "s3cret", "REDIS_URL": "redis://10.0.0.5:6379/2"}
	for _, tc := range []struct {
		yaml, want, err string
	}{
		{yaml: "demo: false", want: ""},
		{yaml: `redis: {url: "redis://127.0.0.1:6379/0"}`, want: "redis://127.0.0.1:6379/0"},
		{yaml: `redis: {url: "redis://:${REDIS_PASSWORD}@cache:6379/0"}`, want: "redis://:s3cret@cache:6379/0"},
		{yaml: `redis: {url: "${REDIS_URL}"}`, want: "redis://10.0.0.5:6379/2"},
		{yaml: `redis: {url: "rediss://cache:6380/0"}`, want: "rediss://cache:6380/0"},
		{yaml: `redis: {url: "redis://:p$ss@cache:6379/0"}`, want: "redis://:p$ss@cache:6379/0"},
		{yaml: `redis: {url: "redis://:${NOT_SET}@cache:6379/0"}`, err: "config: redis.url: ${NOT_SET} is not set in the environment"},
		{yaml: `redis: {url: "127.0.0.1:6379"}`, err: "config: redis.url: want redis://host:port/db"},
		{yaml: `redis: {addr: "127.0.0.1:6379"}`, err: "field addr not found"},
	} {
		c, err := Parse([]byte(tc.yaml))
		var got string
		if err == nil {
			got, err = c.Redis.ResolvedURL(func(k string) string { return env[k] })
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got != tc.want {
			t.Errorf("%s: url %q, want %q", tc.yaml, got, tc.want)
		}
	}
}
