package mcpserver

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/warden-run/warden/internal/principal"
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

// StoreErrorLocal is RateLimits.OnStoreError's value that counts calls in
// this process while the RateStore fails; any other refuses them.
const StoreErrorLocal = "local"

// rateLimiter keeps a token bucket per client, per tool and per person:
// in this process, or in a RateStore replicas share.
type rateLimiter struct {
	now     func() time.Time
	store   RateStore // nil: this process's buckets only
	log     *slog.Logger
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newRateLimiter(now func() time.Time, store RateStore, log *slog.Logger) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &rateLimiter{now: now, store: store, log: log, buckets: make(map[string]*rate.Limiter)}
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

// RateStore keeps token buckets that replicas share, so that a limit
// counts the calls of all of them (internal/ratestore keeps them in
// PostgreSQL). Each Take is one atomic update of one bucket.
type RateStore interface {
	// Take takes one token from the bucket under key, which holds up to
	// burst tokens and gains rate of them a second, and reports whether
	// there was one; when not, retry is when there will be. It must bound
	// its own wait.
	Take(ctx context.Context, key string, rate float64, burst int) (ok bool, retry time.Duration, err error)
	// Give puts back one token taken from the bucket under key, for a
	// call a later bucket refused; the bucket never holds more than burst.
	Give(ctx context.Context, key string, rate float64, burst int) error
	// Name names the store for messages, without credentials (e.g.
	// postgres://warden@db/warden).
	Name() string
}

// bucketCheck is one bucket a call takes a token from.
type bucketCheck struct {
	key, who string
	l        *RateLimit
}

// bucketKey is the key of a bucket: its kind and the parts that name it,
// each quoted, so that no two distinct (kind, parts) make one key whatever
// bytes the parts hold (a subject holding a separator, an issuer that
// ends where another's subject begins).
func bucketKey(kind string, parts ...string) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, p := range parts {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(p))
	}
	return b.String()
}

// rateChecks lists the buckets a call of toolName by p, from the client
// the ticket names (its session, or else p), takes a token from: the
// client's, the tool's and the person's (an OAuth principal's, keyed by
// issuer and subject).
func rateChecks(p principal.Principal, session, toolName string, rl RateLimits) []bucketCheck {
	var checks []bucketCheck
	if l := rl.PerClient; l != nil && l.Rate > 0 {
		key := bucketKey("session", session)
		if session == "" {
			key = bucketKey("principal", p.Via, p.Issuer, p.Subject)
		}
		checks = append(checks, bucketCheck{key, "this client", l})
	}
	if l := rl.PerTool; l != nil && l.Rate > 0 && toolName != "" {
		checks = append(checks, bucketCheck{bucketKey("tool", toolName), "tool " + toolName, l})
	}
	if rl.PerPerson != nil && p.Via == principal.ViaOAuth {
		if l := rl.PerPerson(p); l != nil && l.Rate > 0 {
			checks = append(checks, bucketCheck{bucketKey("person", p.Issuer, p.Subject), "person " + strconv.Quote(p.Subject), l})
		}
	}
	return checks
}

// allow takes a token for a call of toolName by p (from session, "" for a
// sessionless request) from each bucket that applies, or none and returns
// the refusal (with its retry hint) when one is empty. With a store the
// buckets are the store's; when the store fails, rl.OnStoreError says
// whether the call is refused (the default) or counted here.
func (r *rateLimiter) allow(ctx context.Context, p principal.Principal, session, toolName string, rl RateLimits) *tool.Result {
	checks := rateChecks(p, session, toolName, rl)
	if len(checks) == 0 {
		return nil
	}
	if r.store != nil {
		res, err := r.allowShared(ctx, checks)
		if err == nil {
			return res
		}
		if rl.OnStoreError != StoreErrorLocal {
			r.log.Warn("call refused: the shared rate limits cannot be read", "store", r.store.Name(), "error", err)
			return tool.ErrorResult(tool.Errorf(tool.KindUnavailable,
				"the rate limits are kept in %s, which cannot be reached, so the call is refused (server.rate_limit.on_backend_error: refuse; "+
					"local counts calls in each replica while the database is down): %v", r.store.Name(), err))
		}
		r.log.Warn("the shared rate limits cannot be read: counting in this process (server.rate_limit.on_backend_error: local)",
			"store", r.store.Name(), "error", err)
	}
	return r.allowLocal(checks)
}

// allowShared takes the call's tokens from the store: bucket by bucket,
// each an atomic update, giving back those taken when a later one is
// empty or the store fails.
func (r *rateLimiter) allowShared(ctx context.Context, checks []bucketCheck) (*tool.Result, error) {
	var taken []bucketCheck
	giveBack := func() {
		for _, t := range taken {
			// A token not given back only makes the bucket stricter.
			_ = r.store.Give(ctx, t.key, t.l.Rate, max(t.l.Burst, 1))
		}
	}
	for _, c := range checks {
		ok, retry, err := r.store.Take(ctx, c.key, c.l.Rate, max(c.l.Burst, 1))
		if err != nil {
			giveBack()
			return nil, err
		}
		if ok {
			taken = append(taken, c)
			continue
		}
		giveBack()
		return rateRefusal(c, retry), nil
	}
	return nil, nil
}

// allowLocal takes the call's tokens from this process's buckets.
func (r *rateLimiter) allowLocal(checks []bucketCheck) *tool.Result {
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
		return rateRefusal(c, delay)
	}
	return nil
}

// rateRefusal is the result of a call c's bucket refused, to retry after
// delay.
func rateRefusal(c bucketCheck, delay time.Duration) *tool.Result {
	secs := max(1, int(math.Ceil(delay.Seconds())))
	out := tool.ErrorResult(tool.Errorf(tool.KindRateLimited,
		"%s is over its rate of %s calls (burst %d, %s); retry in %ds",
		c.who, formatRate(c.l.Rate), max(c.l.Burst, 1), c.l.Setting, secs))
	out.Meta = map[string]any{tool.MetaRetryAfter: secs}
	return out
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
