package usage

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Nanos is an amount of money in nano-dollars (1e-9 USD). Every balance,
// hold, limit and charge is an integer number of nanos: sums are exact and
// the order in which charges are added never changes a total. The int64
// range is ±9.2 billion dollars.
type Nanos int64

// NanosPerUSD is the number of nanos in one US dollar.
const NanosPerUSD Nanos = 1_000_000_000

// USD renders n as an exact decimal number of dollars with no trailing
// zeros ("0.0042", "12.5", "0"); it is used both for JSON numbers and for
// messages.
func (n Nanos) USD() string {
	// On the stack: appended to nil, the digits took three allocations
	// before the string's own (every request's log line has a cost).
	var b [32]byte // "-9223372036.854775808" is the longest
	return string(n.AppendUSD(b[:0]))
}

// AppendUSD appends USD() to b (the ledger's records encode amounts on
// every settlement: no intermediate strings).
func (n Nanos) AppendUSD(b []byte) []byte {
	u := uint64(n)
	if n < 0 {
		b = append(b, '-')
		u = uint64(-n) // MinInt64 wraps to itself, which is the right magnitude as uint64
	}
	b = strconv.AppendUint(b, u/uint64(NanosPerUSD), 10)
	frac := u % uint64(NanosPerUSD)
	if frac == 0 {
		return b
	}
	var d [10]byte
	d[0] = '.'
	for i := 9; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 10
	for d[end-1] == '0' {
		end--
	}
	return append(b, d[:end]...)
}

// String is "$" + USD(), for messages and logs.
func (n Nanos) String() string {
	if n < 0 {
		return "-$" + (-n).USD()
	}
	return "$" + n.USD()
}

// MarshalJSON writes the amount as a JSON number of dollars, exactly.
func (n Nanos) MarshalJSON() ([]byte, error) { return n.AppendUSD(nil), nil }

// UnmarshalJSON reads a JSON number of dollars (see ParseUSD).
func (n *Nanos) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

var (
	errNotNumber = errors.New("not a decimal number")
	errRange     = errors.New("amount out of range")
)

var nanosPerUSDRat = new(big.Rat).SetInt64(int64(NanosPerUSD))

// ParseUSD converts a decimal dollar amount ("10", "0.25", "1e-3") to nanos
// without going through float64: the text is read as an exact rational and
// rounded half away from zero to the nearest nano.
func ParseUSD(s string) (Nanos, error) {
	s = strings.TrimSpace(s)
	if v, ok := ParsePlainUSD(s); ok {
		return v, nil
	}
	if s == "" || len(s) > 64 || strings.ContainsAny(s, "/_") {
		return 0, errNotNumber
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, errNotNumber
	}
	r.Mul(r, nanosPerUSDRat)
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, errRange
	}
	v := q.Int64()
	if neg {
		v = -v
	}
	return Nanos(v), nil
}

// ParsePlainUSD is ParseUSD's fast path, for what AppendUSD writes (every
// amount in the ledger's records; the ledger's decoders read with it, so a
// record in any other form goes to encoding/json): an optional minus, at most 9 whole
// digits, and at most 9 decimals — exact in int64 arithmetic, with no
// rounding to do. Anything else (exponents, more digits) is left to
// big.Rat.
func ParsePlainUSD(s string) (Nanos, bool) {
	neg := false
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 9 || (dot && (frac == "" || len(frac) > 9)) {
		return 0, false
	}
	var v int64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	v *= int64(NanosPerUSD)
	scale := int64(NanosPerUSD)
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		scale /= 10
		v += int64(c-'0') * scale
	}
	if neg {
		v = -v
	}
	return Nanos(v), true
}

// FromUSD converts a float dollar amount (a catalog price) to nanos,
// rounding half away from zero. Only configuration goes through it; amounts
// a client sends are parsed with ParseUSD.
func FromUSD(usd float64) Nanos {
	return Nanos(clampRound(usd * float64(NanosPerUSD)))
}

func clampRound(f float64) int64 {
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(math.Round(f))
}

// AddSat adds without wrapping around: a sum past the int64 range stays at
// its bound (the ledger's totals, a cost's parts).
func AddSat(a, b Nanos) Nanos {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}
