package mcpserver

import (
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/warden-run/warden/tool"
)

// RateLimit is a token bucket: Rate calls per second on average, up to Burst
// at once. Setting is the config key that sets it, for refusals.
type RateLimit struct {
	Rate    float64
	Burst   int
	Setting string
}

// maxBuckets bounds the token buckets kept; past it, full buckets (which
// say nothing a new one would not) are dropped.
const maxBuckets = 10000

// rateLimiter keeps a token bucket per client and per tool.
type rateLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newRateLimiter(now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{now: now, buckets: make(map[string]*rate.Limiter)}
}

// bucket returns the bucket under key, made or updated for l. Called with
// r.mu held.
func (r *rateLimiter) bucket(key string, l *RateLimit, now time.Time) *rate.Limiter {
	b, ok := r.buckets[key]
	if !ok {
		if len(r.buckets) >= maxBuckets {
			for k, old := range r.buckets {
				if old.TokensAt(now) >= float64(old.Burst()) {
					delete(r.buckets, k)
				}
			}
		}
		b = rate.NewLimiter(rate.Limit(l.Rate), max(l.Burst, 1))
		r.buckets[key] = b
		return b
	}
	if b.Limit() != rate.Limit(l.Rate) {
		b.SetLimitAt(now, rate.Limit(l.Rate))
	}
	if b.Burst() != max(l.Burst, 1) {
		b.SetBurstAt(now, max(l.Burst, 1))
	}
	return b
}

// allow takes a token for the call from each bucket that applies, or none
// and returns the refusal (with its retry hint) when one is empty.
func (r *rateLimiter) allow(client, toolName string, perClient, perTool *RateLimit) *tool.Result {
	type check struct {
		key, who string
		l        *RateLimit
	}
	var checks []check
	if perClient != nil && perClient.Rate > 0 {
		checks = append(checks, check{"c\x00" + client, "this client", perClient})
	}
	if perTool != nil && perTool.Rate > 0 {
		checks = append(checks, check{"t\x00" + toolName, "tool " + toolName, perTool})
	}
	if len(checks) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var taken []*rate.Reservation
	for _, c := range checks {
		res := r.bucket(c.key, c.l, now).ReserveN(now, 1)
		delay := res.DelayFrom(now)
		if res.OK() && delay == 0 {
			taken = append(taken, res)
			continue
		}
		if res.OK() {
			res.CancelAt(now)
		}
		for _, t := range taken {
			t.CancelAt(now) // the call does not run: give its tokens back
		}
		secs := max(1, int(math.Ceil(delay.Seconds())))
		out := tool.ErrorResult(tool.Errorf(tool.KindRateLimited,
			"%s is over its rate of %s calls (burst %d, %s); retry in %ds",
			c.who, formatRate(c.l.Rate), max(c.l.Burst, 1), c.l.Setting, secs))
		out.Meta = map[string]any{tool.MetaRetryAfter: secs}
		return out
	}
	return nil
}

// formatRate writes calls per second the way config takes them.
func formatRate(perSecond float64) string {
	switch {
	case perSecond >= 1:
		return strconv.FormatFloat(perSecond, 'f', -1, 64) + "/s"
	case perSecond*60 >= 1:
		return strconv.FormatFloat(perSecond*60, 'f', -1, 64) + "/m"
	}
	return strconv.FormatFloat(perSecond*3600, 'f', -1, 64) + "/h"
}
