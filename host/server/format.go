package server

import (
	"strconv"
	"strings"
)

func indexSlash(id string) int {
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return i
	}
	return len(id)
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// perToken converts USD per million tokens to USD per token.
func perToken(perMillion float64) string { return formatFloat(perMillion / 1e6) }
