package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseRate reads a rate such as "10/s", "600/m", "2/h" or "0.5/s" as calls
// per second; "" and "0" mean no limit (0). config checks server.rate_limit
// and tools.limits.<tool>.rate with it and turns them into the buckets the
// MCP server keeps.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("%q is not a rate: write calls per unit, such as 10/s, 600/m or 2/h", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("%q is not a rate: %q is not a non-negative number", s, num)
	}
	var per time.Duration
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		return 0, fmt.Errorf("%q is not a rate: the unit %q is not s, m or h", s, unit)
	}
	return n / per.Seconds(), nil
}
