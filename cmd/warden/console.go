package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/console"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/userdirs"
)

func newConsoleCmd(g *globalFlags) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Open the web console of this config on a loopback address",
		Long: `Serve the web console for the config (docs/console.md) on a loopback address and
print a one-time login link: open it in your browser. The link works once, for five
minutes; the browser then holds a session cookie for two hours. The console is
served under a random path chosen at each launch, which the link carries. It shows
the tools with what they request and are granted (and edits grants the way
` + "`warden grant`" + ` does), reviews and installs modules, and shows the audit log
(log.audit). The questions a running server's calls wait on are answered on that
server's console (server.console).
Stop it with Ctrl-C.`,
		Example: `  warden console
  warden console --addr 127.0.0.1:7332`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil || !isLoopbackName(host) {
				return usagef("--addr %q: the console of `warden console` listens on a loopback address only (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); a team console is server.console under warden serve --http", addr)
			}
			ctx := cmd.Context()
			a, logger, err := g.start(ctx)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			a.Catalog().LoadTools(ctx)
			if err := a.WatchConfig(ctx); err != nil {
				logger.Warn("config changes will need a restart", "error", err)
			}
			// A random path per launch, which the session cookie is scoped
			// to: another server on this host receives the cookie
			// (cookies ignore ports) but cannot name a page to use it on.
			c, err := newConsole(a, logger, consoleBroker(a), console.Options{Prefix: console.RandomPrefix("/"), SessionTTL: console.LocalSessionTTL})
			if err != nil {
				return err
			}
			defer c.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("console: %w", err)
			}
			hs := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				c.Close() // ends the live streams Shutdown would wait for
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			fmt.Fprintf(cmd.OutOrStdout(), "warden console: open this one-time login link in your browser (it works once, for %s):\n\n  http://%s%s\n\n",
				console.DefaultLinkTTL, ln.Addr(), c.NewLoginLink(principal.Local))
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("console: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "loopback `ADDR` (host:port) to listen on; port 0 picks a free one")
	return cmd
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newConsole builds the console of a running app: the pages call the
// code the CLI runs (listTools, the grant editor, the installer).
func newConsole(a *app.App, logger *slog.Logger, broker approvals.Broker, o console.Options) (*console.Console, error) {
	cfg := a.Config()
	o.Broker = broker
	o.Tools = &consoleTools{a: a, path: cfg.File}
	o.Installer = &consoleInstaller{a: a, reviews: map[string]*pendingReview{}}
	o.AuditPath = cfg.Log.Audit
	if store := a.Tasks(); store != nil {
		o.Tasks = store // the Tasks page: the person's own tasks (tasks.OwnerOf)
	}
	o.Logger = logger
	return console.New(o)
}

// consoleTools is the Tools page's backend: `warden tools` and
// `warden grant`.
type consoleTools struct {
	a    *app.App
	path string
	mu   sync.Mutex // one grant edit at a time
}

func (t *consoleTools) List(ctx context.Context) (console.ToolList, error) {
	list := listTools(ctx, t.a)
	cfg := t.a.Config()
	pol := policy.New(cfg)
	var out console.ToolList
	for _, r := range list.Tools {
		info := console.ToolInfo{Name: r.Name, Module: r.Module, Digest: r.SHA256,
			Requested: r.Requested.Summary(), Granted: r.Granted.Summary(), NotGranted: r.NotGranted.Summary()}
		if r.Source != nil {
			info.Source, info.Signer = r.Source.Ref, r.Source.Signer
		}
		tp := pol.Tool(r.Name)
		if tp.Gated {
			info.Gates = append(info.Gates, "gate "+tp.GateKey+": "+tp.Gate.Action)
		}
		lim := pol.ModuleLimits(r.Module)
		info.Limits = append(info.Limits, "timeout="+lim.Timeout.String(), fmt.Sprintf("memory=%dMiB", lim.Memory>>20), fmt.Sprintf("fuel=%d", lim.Fuel))
		if tp.MaxInFlight > 0 {
			info.Limits = append(info.Limits, fmt.Sprintf("max_in_flight=%d", tp.MaxInFlight))
		}
		out.Tools = append(out.Tools, info)
	}
	for _, f := range list.Failed {
		out.Problems = append(out.Problems, "FAILED module "+f.Module+": "+f.Error)
	}
	for _, r := range list.Rejected {
		out.Problems = append(out.Problems, "REJECTED tool "+r.Name+" (module "+r.Module+"): "+r.Reason)
	}
	for _, r := range list.Refused {
		out.Problems = append(out.Problems, "REFUSED tool "+r.Tool+" (module "+r.Module+"): "+r.Reason)
	}
	out.Problems = append(out.Problems, list.GrantsElsewhere...)
	for _, u := range list.Unusable {
		out.Problems = append(out.Problems, "not granted (no call can use it): "+u)
	}
	for _, m := range list.ServersMissing {
		out.Problems = append(out.Problems, "language server missing: "+m.Tool+" lsp="+m.Language+": "+m.Error)
	}
	return out, nil
}

// Grant is `warden grant`: the same parsing, the same refusals (config's
// words first, then the gate's: a value no call could use), the same
// module binding, the same comment-keeping editor.
func (t *consoleTools) Grant(ctx context.Context, req console.GrantRequest, apply bool) (console.GrantResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changes, err := parseChanges(req.Tool, req.Args, true)
	if err != nil {
		return console.GrantResult{}, err
	}
	if req.Module == "" { // as `warden grant`: --module names a grant ahead of its install
		if err := unknownTool(t.a, req.Tool); err != nil {
			return console.GrantResult{}, err
		}
	}
	module, err := grantModule(t.a, req.Tool, req.Module)
	if err != nil {
		return console.GrantResult{}, err
	}
	edit := func(d *config.Document) error {
		if err := d.BindGrant(req.Tool, module); err != nil {
			return err
		}
		return d.Grant(req.Tool, changes...)
	}
	if err := config.CheckEdit(t.path, edit); err != nil {
		return console.GrantResult{}, err
	}
	cfg := t.a.Config()
	judge, err := app.NewGrants(cfg)
	if err != nil {
		return console.GrantResult{}, err
	}
	warnings, err := judge.CheckChanges(req.Tool, changes)
	if err != nil {
		return console.GrantResult{}, err
	}
	before, err := os.ReadFile(t.path)
	if err != nil {
		return console.GrantResult{}, err
	}
	var after []byte
	if apply {
		if _, err := config.EditFile(t.path, edit); err != nil {
			return console.GrantResult{}, err
		}
		if after, err = os.ReadFile(t.path); err != nil {
			return console.GrantResult{}, err
		}
	} else {
		d, err := config.ParseDocument(before)
		if err != nil {
			return console.GrantResult{}, err
		}
		if err := edit(d); err != nil {
			return console.GrantResult{}, err
		}
		after = d.Bytes()
	}
	res := console.GrantResult{Diff: console.UnifiedDiff(cfg.File, string(before), string(after)), Warnings: warnings}
	if apply {
		var out bytes.Buffer
		if newCfg, err := config.Load(t.path); err == nil {
			granted, _ := newCfg.Grants(req.Tool, module)
			printGrants(&out, "", granted)
		}
		res.Granted = out.String()
	}
	return res, nil
}

// consoleInstaller is the Install page's backend: `warden install` of a
// registry reference or a URL.
type consoleInstaller struct {
	a       *app.App
	mu      sync.Mutex
	reviews map[string]*pendingReview
}

type pendingReview struct {
	r       *install.Review
	f       *install.Fetched
	grown   bool
	expires time.Time
}

// reviewTTL is how long a review waits to be approved; maxReviews bounds
// the reviews waiting.
const (
	reviewTTL  = 15 * time.Minute
	maxReviews = 8
)

func (ci *consoleInstaller) Review(ctx context.Context, ref string) (console.InstallReview, error) {
	if !install.IsRemote(ref) {
		return console.InstallReview{}, fmt.Errorf("%q is not a registry reference or a URL", ref)
	}
	inst := ci.a.Installer()
	f, err := inst.Fetch(ctx, ref, install.FetchOptions{})
	if err != nil {
		return console.InstallReview{}, err
	}
	r, err := inst.ReviewFetched(ctx, f, "")
	if err != nil {
		f.Close()
		return console.InstallReview{}, err
	}
	var text bytes.Buffer
	printReview(&text, r)
	p := &pendingReview{r: r, f: f, expires: time.Now().Add(reviewTTL)}
	var why []string
	if r.Previous != "" && r.Previous != r.SHA256 {
		var changes []install.ToolChange
		changes, p.grown = inst.ReplacementChanges(r)
		fmt.Fprintln(&text)
		printChanges(&text, r.Module, changes)
		if p.grown {
			why = append(why, "its tools request more capabilities than the installed version: "+growth(r.Module, changes))
		}
	}
	if r.NeedsFindingsApproval() {
		why = append(why, findingsSummary(r))
	}
	id := consoleID()
	ci.mu.Lock()
	now := time.Now()
	for k, old := range ci.reviews {
		if now.After(old.expires) || len(ci.reviews) >= maxReviews {
			old.f.Close()
			delete(ci.reviews, k)
		}
	}
	ci.reviews[id] = p
	ci.mu.Unlock()
	return console.InstallReview{ID: id, Ref: ref, Text: text.String(), NeedsAccept: len(why) > 0, Why: strings.Join(why, "; ")}, nil
}

func (ci *consoleInstaller) Install(ctx context.Context, id string, accept bool) (string, error) {
	ci.mu.Lock()
	p, ok := ci.reviews[id]
	if ok {
		delete(ci.reviews, id)
	}
	ci.mu.Unlock()
	if !ok || time.Now().After(p.expires) {
		return "", errors.New("this review expired or was already used: review the module again")
	}
	defer p.f.Close()
	if (p.grown || p.r.NeedsFindingsApproval()) && !accept {
		return "", errors.New("the review shows more capabilities or descriptor findings, which need your explicit approval; nothing changed")
	}
	if err := ci.a.Installer().Install(ctx, p.r); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("installed %s (sha256 %s pinned as tools.pins.%s)", p.r.Dest, p.r.SHA256[:12], configkey.Fold(p.r.Module))
	for _, t := range p.r.Tools {
		if !t.Missing.IsZero() {
			msg += fmt.Sprintf("\n%s requests, not granted: %s", t.Descriptor.Name, t.Missing.Summary())
		}
	}
	return msg, nil
}

func consoleID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%x", b)
}

// serveConsole is server.console under serve --http: the console at
// config.ConsolePath on the same listener. On a loopback address without
// server.console_login it prints a one-time login link on stderr; on any
// other address it requires server.console_login (OpenID Connect).
func serveConsole(cmd *cobra.Command, a *app.App, logger *slog.Logger, obs *observability, addr string) (*console.Console, error) {
	cfg := a.Config()
	login := cfg.Server.ConsoleLogin
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usagef("--http %q: %v", addr, err)
	}
	local := isLoopbackName(host)
	if !local && !login.Enabled() {
		return nil, usagef("server.console on %s, which is not a loopback address, needs server.console_login (an OpenID Connect login, docs/console.md): "+
			"a one-time link is for a console on this machine only", addr)
	}
	// A loopback console opened by login links: under a random path per
	// launch, which its cookie is scoped to (see warden console), with
	// the shorter local session.
	o := console.Options{Prefix: console.RandomPrefix(config.ConsolePath), SessionTTL: console.LocalSessionTTL}
	if login.Enabled() {
		o = console.Options{Prefix: config.ConsolePath}
		o.OIDC = &console.OIDC{Issuer: login.Issuer, ClientID: login.ClientID, ClientSecret: login.ClientSecret,
			RedirectURL: login.RedirectURL, GroupsClaim: login.GroupsClaim,
			AdminSubjects: login.AdminSubjects, AdminGroups: login.AdminGroups}
		o.Hosts = []string{login.ConsoleHost()}
		if u, err := url.Parse(login.RedirectURL); err == nil {
			o.Origin = u.Scheme + "://" + u.Host
		}
		o.TLS = strings.HasPrefix(login.RedirectURL, "https://")
	}
	if obs != nil && obs.metrics != nil {
		o.Metrics = obs.metrics.Registry()
	}
	// The questions of this server's calls. The gate and prompt paths ask
	// the same broker (internal/approvals) once they route there.
	c, err := newConsole(a, logger, consoleBroker(a), o)
	if err != nil {
		return nil, err
	}
	// Serve's shutdown waits for every response: the live streams end
	// when serve is told to stop, not after.
	context.AfterFunc(cmd.Context(), c.Close)
	if !login.Enabled() {
		if err := announceLoginLink(cmd.ErrOrStderr(), "http://"+addr+c.NewLoginLink(principal.Local), userdirs.StateDir); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// loginLinkFile is the file, under the user's state directory, that holds
// serve's login link when stderr is not a terminal.
const loginLinkFile = "warden/console-login-link"

// announceLoginLink tells the person at the machine serve's one-time
// login link. The link is a credential: on a terminal it is printed; when
// stderr is anything else (journald, docker logs, a file), which keeps
// what it is given, the link goes to a file only the user can read
// (0600, under their state directory) and stderr names the file.
func announceLoginLink(stderr io.Writer, link string, stateDir func() (string, error)) error {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stderr, "warden: console: open this one-time login link in your browser (it works once, for %s):\n  %s\n",
			console.DefaultLinkTTL, link)
		return nil
	}
	dir, err := stateDir()
	if err != nil {
		return fmt.Errorf("console: stderr is not a terminal, so the login link goes to a file under the state directory: %w", err)
	}
	path := filepath.Join(dir, filepath.FromSlash(loginLinkFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("console: login link file: %w", err)
	}
	// Replace, never follow or reuse: a file left by another user or an
	// earlier run must not keep its mode or be a link elsewhere.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".console-login-link-*")
	if err != nil {
		return fmt.Errorf("console: login link file: %w", err)
	}
	_, werr := fmt.Fprintf(tmp, "%s\n", link)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o600)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("console: login link file: %w", werr)
	}
	fmt.Fprintf(stderr, "warden: console: stderr is not a terminal, so the one-time login link (it works once, for %s) is in %s (readable by you only)\n",
		console.DefaultLinkTTL, path)
	return nil
}

// consoleBroker is the broker the console answers: the one the app's gate
// and prompt paths ask when their client cannot elicit. Calling
// ConsoleServes tells the app a console runs in this process, so that
// approvals.via: auto routes questions here.
func consoleBroker(a *app.App) approvals.Broker {
	a.ConsoleServes()
	return a.Approvals()
}
