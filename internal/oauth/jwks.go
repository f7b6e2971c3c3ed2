package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/termsafe"
)

// keySet is one issuer's signing keys: fetched on first use, again when a
// token names a key not in the set or the set is older than MaxAge, and
// never more often than once per RefreshMin, so that a flood of tokens
// naming made-up keys costs the issuer at most one request per RefreshMin.
type keySet struct {
	v      *Verifier
	issuer string
	url    string

	fetches atomic.Int64 // fetches started, for tests and stats

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	loaded  bool      // keys holds a fetched set
	fetched time.Time // when keys were fetched
	tried   bool      // a fetch has started
	triedAt time.Time // when the last fetch started
	lastErr error     // why the last fetch failed, nil if it did not
	running chan struct{}
}

// key returns the key of kid (any kid-less key when the set has exactly
// one usable for alg and kid is empty) that can check alg.
func (ks *keySet) key(ctx context.Context, kid, alg string) (jose.JSONWebKey, error) {
	fetchedForThis := false
	for {
		ks.mu.Lock()
		if w := ks.running; w != nil {
			ks.mu.Unlock()
			select {
			case <-w:
				fetchedForThis = true
				continue
			case <-ctx.Done():
				return jose.JSONWebKey{}, &Error{Description: "the request ended while the issuer's keys were being fetched",
					Detail: ctx.Err().Error(), Unavailable: true}
			}
		}
		now := ks.v.opts.Now()
		k, found := ks.findLocked(kid, alg)
		fresh := ks.loaded && now.Sub(ks.fetched) < ks.v.opts.MaxAge
		if found && fresh || fetchedForThis {
			ks.mu.Unlock()
			return ks.result(k, found, kid, alg)
		}
		if ks.startFetchLocked(now) == nil {
			// Rate-limited: answer from what is known.
			ks.mu.Unlock()
			return ks.result(k, found, kid, alg)
		}
		ks.mu.Unlock()
	}
}

// result is key's answer once no (further) fetch is to be made; ks.mu not
// held, the fields read are read under it.
func (ks *keySet) result(k jose.JSONWebKey, found bool, kid, alg string) (jose.JSONWebKey, error) {
	if found {
		return k, nil
	}
	ks.mu.Lock()
	loaded, lastErr := ks.loaded, ks.lastErr
	ks.mu.Unlock()
	if !loaded {
		detail := "not fetched yet"
		if lastErr != nil {
			detail = lastErr.Error()
		}
		return jose.JSONWebKey{}, &Error{Description: "the issuer's signing keys could not be fetched; try again later",
			Detail: termsafe.Line(fmt.Sprintf("issuer %q, %s: %s", ks.issuer, ks.url, detail)), Unavailable: true}
	}
	if kid == "" {
		return jose.JSONWebKey{}, refuse("the access token names no signing key (kid)",
			"issuer %q publishes no single key usable for %s", ks.issuer, alg)
	}
	return jose.JSONWebKey{}, refuse("the access token's signing key (kid) is unknown",
		"kid %q (%s) is not in the JWK Set of issuer %q", kid, alg, ks.issuer)
}

// findLocked looks kid up in the set; ks.mu held.
func (ks *keySet) findLocked(kid, alg string) (jose.JSONWebKey, bool) {
	var only jose.JSONWebKey
	n := 0
	for i := range ks.keys {
		k := &ks.keys[i]
		if kid != "" && k.KeyID == kid && usable(k, alg) {
			return *k, true
		}
		if kid == "" && usable(k, alg) {
			only = *k
			n++
		}
	}
	return only, kid == "" && n == 1
}

// startFetchLocked starts a fetch unless one ran less than RefreshMin ago,
// and returns the channel closed when it ends (nil if none started); ks.mu
// held.
func (ks *keySet) startFetchLocked(now time.Time) chan struct{} {
	if ks.running != nil {
		return ks.running
	}
	if ks.tried && now.Sub(ks.triedAt) < ks.v.opts.RefreshMin {
		return nil
	}
	ks.tried, ks.triedAt = true, now
	done := make(chan struct{})
	ks.running = done
	ks.fetches.Add(1)
	go func() {
		keys, err := ks.fetch()
		ks.mu.Lock()
		if err != nil {
			ks.lastErr = err
			ks.v.log.Warn("could not fetch an issuer's signing keys", "issuer", ks.issuer, "jwks_url", ks.url,
				"error", termsafe.Line(err.Error()), "keeping", len(ks.keys), "retry_after", ks.v.opts.RefreshMin)
		} else {
			ks.keys, ks.loaded, ks.fetched, ks.lastErr = keys, true, ks.v.opts.Now(), nil
		}
		ks.running = nil
		close(done)
		ks.mu.Unlock()
	}()
	return done
}

// fetch gets and parses the JWK Set, bounded in time and size.
func (ks *keySet) fetch() ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ks.v.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := ks.v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	limit := ks.v.opts.MaxJWKSBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the JWK Set: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("the JWK Set is larger than %d bytes", limit)
	}
	return parseKeySet(body)
}

// parseKeySet reads a JWK Set and keeps the public signing keys warden can
// use: RSA of at least 2048 bits, EC P-256, Ed25519. One key of a kind it
// does not know does not cost the others (issuers publish encryption keys
// and new key types beside their signing keys); a set with no usable key
// is an error.
func parseKeySet(body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the JWK Set is not JSON: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() {
			if _, symmetric := k.Key.([]byte); symmetric {
				continue
			}
			k = k.Public()
		}
		switch pk := k.Key.(type) {
		case *rsa.PublicKey:
			if pk.N.BitLen() < minRSABits {
				continue
			}
		case *ecdsa.PublicKey:
			if pk.Curve != elliptic.P256() {
				continue
			}
		case ed25519.PublicKey:
		default:
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWK Set has no usable signing key (RSA ≥ 2048 bits, EC P-256 or Ed25519, use sig)")
	}
	return keys, nil
}

// Fetches reports how many times the JWK Set of issuer was fetched (or a
// fetch was started).
func (v *Verifier) Fetches(issuer string) int64 {
	if ks, ok := v.issuers[issuer]; ok {
		return ks.fetches.Load()
	}
	return 0
}
