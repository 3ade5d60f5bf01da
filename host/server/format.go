package server

import (
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/host/billing"
)

func indexSlash(id string) int {
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return i
	}
	return len(id)
}

// usd renders a configured USD price as an exact decimal: the price in
// nanos, as billing charges it, so /models shows what is charged.
func usd(f float64) string { return billing.FromUSD(f).USD() }

// perToken converts USD per million tokens to USD per token, exactly: the
// nanos per million shifted by six places, never a float division (which
// printed 0.1 as 0.00000010000000000000001).
func perToken(perMillion float64) string {
	n := billing.FromUSD(perMillion) // nanos per million tokens = 1e-15 USD per token
	digits := strconv.FormatInt(int64(n), 10)
	const places = 15
	if len(digits) <= places {
		digits = strings.Repeat("0", places-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-places], strings.TrimRight(digits[len(digits)-places:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}
