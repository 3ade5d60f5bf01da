package billing

import (
	"time"

	"github.com/switchyard/switchyard/host/keys"
)

// period is a usage counter that rolls over at a UTC boundary. Start is the
// Unix second at which the counted period began.
type period struct {
	Start int64 `json:"start"`
	Usage Nanos `json:"usage"`
}

// periodStart is the UTC boundary at or before t for a reset kind: midnight,
// Monday midnight (ISO weeks) or the first of the month.
func periodStart(kind string, t time.Time) int64 {
	t = t.UTC()
	y, m, d := t.Date()
	switch kind {
	case keys.ResetDaily:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
	case keys.ResetWeekly:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC).Unix()
	case keys.ResetMonthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return 0
}

// add counts amount charged at t. A charge in a later period rolls the
// counter over; a charge stamped before the current period (a settlement
// that raced a boundary) does not count in it. Both rules make the result
// independent of the order in which charges are applied, so memory and disk
// agree whatever order their writes happen in.
func (p *period) add(kind string, amount Nanos, t time.Time) {
	s := periodStart(kind, t)
	if s > p.Start {
		p.Start, p.Usage = s, 0
	}
	if s == p.Start {
		p.Usage += amount
	}
}

// at is the counter's value in the period containing now.
func (p period) at(kind string, now time.Time) Nanos {
	if periodStart(kind, now) == p.Start {
		return p.Usage
	}
	return 0
}

func (u *keyUsage) add(amount Nanos, t time.Time) {
	u.Total += amount
	u.Day.add(keys.ResetDaily, amount, t)
	u.Week.add(keys.ResetWeekly, amount, t)
	u.Month.add(keys.ResetMonthly, amount, t)
}

// inPeriod is the usage counted against a limit with the given reset.
func (u *keyUsage) inPeriod(reset string, now time.Time) Nanos {
	switch reset {
	case keys.ResetDaily:
		return u.Day.at(reset, now)
	case keys.ResetWeekly:
		return u.Week.at(reset, now)
	case keys.ResetMonthly:
		return u.Month.at(reset, now)
	}
	return u.Total
}
