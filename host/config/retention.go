package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention says how long records are kept (docs/cluster.md, "Generation
// records"). Zero keeps them forever, the default: deleting a tenant's
// history is the operator's decision.
type Retention struct {
	// Generations is how long a generation record (and its activity index
	// entries) is kept after its request; older ones are deleted by the
	// gateway's pruner. The daily activity totals and every balance stay.
	// "90d", "2160h"; at least MinRetention.
	Generations Duration `yaml:"generations"`
	// Responses is how long a stored Responses API response (store: true,
	// OpenAI's default) is kept for previous_response_id and GET
	// /responses/{id}; unset: DefaultResponsesRetention, as OpenAI keeps
	// them; 0: forever. Without it, every response an account ever made
	// stays on the gateway's disk.
	Responses *Duration `yaml:"responses"`
	// Content is how long a generation's stored prompt and completion
	// (content.store, or an account's store_content) is kept; unset:
	// DefaultContentRetention; 0: forever. It is a setting of its own,
	// not retention.generations, since content is the tenant's data and
	// usually kept for less time than its billing records.
	Content *Duration `yaml:"content"`
}

// DefaultContentRetention is retention.content when unset: 30 days, as
// OpenRouter keeps the content it logs by default.
const DefaultContentRetention = 30 * 24 * time.Hour

// ContentKeep is how long stored content is kept (0: forever).
func (r Retention) ContentKeep() time.Duration {
	if r.Content == nil {
		return DefaultContentRetention
	}
	return time.Duration(*r.Content)
}

// DefaultResponsesRetention is retention.responses when unset: 30 days.
const DefaultResponsesRetention = 30 * 24 * time.Hour

// ResponsesKeep is how long stored responses are kept (0: forever).
func (r Retention) ResponsesKeep() time.Duration {
	if r.Responses == nil {
		return DefaultResponsesRetention
	}
	return time.Duration(*r.Responses)
}

// MinRetention is the shortest retention accepted. An hour is far past
// any request's life (a hold lives at most twice timeouts.request), so a
// record is never pruned while anything could still write it; shorter
// would look like a typo (1s for 1d) that quietly deletes every record.
const MinRetention = time.Hour

// CheckRetention refuses a retention that is negative or below
// MinRetention (0, keep forever, is accepted), with a message saying what
// to write instead.
func CheckRetention(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s is negative: give how long to keep generation records (e.g. 90d), or 0 to keep them forever", FormatDuration(d))
	case d > 0 && d < MinRetention:
		return fmt.Errorf("%s is too short: keep generation records at least %s (e.g. 90d), or 0 to keep them forever", FormatDuration(d), FormatDuration(MinRetention))
	}
	return nil
}

// ParseDuration is time.ParseDuration plus whole days: "90d" (a day is 24
// hours; retention periods are said in days, as LiteLLM's are).
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days > int64(1<<63-1)/int64(24*time.Hour) || days < -int64(1<<63-1)/int64(24*time.Hour) {
			return 0, fmt.Errorf("duration %q: want a whole number of days (90d) or a Go duration (2160h, 90m)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a whole number of days (90d) or a Go duration (2160h, 90m)", s)
	}
	return d, nil
}

// FormatDuration writes d as ParseDuration reads it, in days when it is a
// whole number of them ("90d"), else as Go does without zero minutes and
// seconds ("1h", "1h30m", "59m").
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d != 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}
