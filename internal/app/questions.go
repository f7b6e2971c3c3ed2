package app

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/tool"
)

// Values of tool.MetaQuestion: which of warden's questions it is.
const (
	questionPermission = "permission"
	questionConfirm    = "confirm"
)

// configDigests is the digest of each config in force, keyed so that a
// client cannot test guesses about the config (secrets included) against
// it: with server.state_key, the key derives from it and replicas agree;
// without it, the key is random, like the requestState's own.
type configDigests struct {
	key  []byte
	last atomic.Pointer[configDigest]
}

type configDigest struct {
	cfg *config.Config
	sum string
}

func newConfigDigests(cfg *config.Config) *configDigests {
	key, err := cfg.Server.StateKeyBytes()
	if err != nil || key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("warden config digest v1"))
	return &configDigests{key: h.Sum(nil)}
}

// of returns the digest of cfg: of all of it, so that no change that could
// bear on a question (a grant, a gate, a deny rule, a root a path names) is
// missed. It is computed once per config loaded.
func (d *configDigests) of(cfg *config.Config) string {
	if last := d.last.Load(); last != nil && last.cfg == cfg {
		return last.sum
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		// Never the same for two loads: an answer is then asked again.
		data = fmt.Appendf(nil, "unencodable config %p: %v", cfg, err)
	}
	h := hmac.New(sha256.New, d.key)
	h.Write(data)
	sum := hex.EncodeToString(h.Sum(nil)[:16])
	d.last.Store(&configDigest{cfg: cfg, sum: sum})
	return sum
}

// questionMeta is the _meta of one of warden's own questions: the mark no
// tool can set (hostfuncs/client refuses its keys in a tool's params) and
// the config it was asked under (tool.MetaConfig). A question is part of
// what a 2026-07-28 requestState seals (the digest of its params), so an
// answer given under one config is never taken for the same question asked
// under another: after the owner edits config.yaml (revokes a grant, changes
// a gate), a retry carrying an old answer is asked again.
func (d *configDigests) questionMeta(which string, cfg *config.Config) map[string]any {
	return map[string]any{tool.MetaQuestion: which, tool.MetaConfig: d.of(cfg)}
}

type noticesKey struct{}

// notices collects what a call's result must tell the person.
type notices struct {
	mu   sync.Mutex
	list []string
}

// withNotices returns ctx with a place for the call's notices.
func withNotices(ctx context.Context) (context.Context, *notices) {
	n := &notices{}
	return context.WithValue(ctx, noticesKey{}, n), n
}

// addNotice adds msg to the notices of ctx's call, if it has a place for
// them.
func addNotice(ctx context.Context, msg string) {
	if n, ok := ctx.Value(noticesKey{}).(*notices); ok {
		n.mu.Lock()
		n.list = append(n.list, msg)
		n.mu.Unlock()
	}
}

// attach adds the notices to res, under tool.MetaNotices and each as a text
// content item too, so that a client showing only content shows it.
func (n *notices) attach(res *tool.Result) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if res == nil || len(n.list) == 0 {
		return
	}
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	res.Meta[tool.MetaNotices] = slices.Clone(n.list)
	for _, msg := range n.list {
		res.Content = append(res.Content, tool.Content{Type: "text", Text: msg})
	}
}

type argumentsKey struct{}

// withCallArguments returns ctx carrying the call's arguments, for a
// permission prompt that waits in the console to show them as a gate's
// confirmation does.
func withCallArguments(ctx context.Context, args json.RawMessage) context.Context {
	return context.WithValue(ctx, argumentsKey{}, args)
}

// callArguments returns the arguments of ctx's call, nil when it carries
// none (a feature request).
func callArguments(ctx context.Context) json.RawMessage {
	args, _ := ctx.Value(argumentsKey{}).(json.RawMessage)
	return args
}
