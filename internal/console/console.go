// Package console is warden's web console: a person sees and answers the
// questions calls put to them (internal/approvals), the tools with what
// they request and are granted, installs, the audit trail and tasks.
//
// It is served by warden itself (`warden console` on loopback, or
// server.console under `warden serve --http`), never without
// authentication: a one-time login link printed on the terminal, or an
// OpenID Connect login on a team server. Every page is rendered on the
// server (html/template); the small script and stylesheet are embedded and
// the Content-Security-Policy allows nothing else.
//
// The console decides nothing itself: each page calls the code the CLI
// and the gate path use (the Broker, the grant editor, the installer),
// reached through the interfaces of Options, so that a page can never
// allow what the command line refuses.
package console

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Console.
type Options struct {
	// Prefix is the path the console is served under, starting and ending
	// with "/" ("/console/" under serve --http, "/" for warden console).
	Prefix string
	// Hosts are the host names (without port) requests may name in their
	// Host header besides the loopback names: the DNS-rebinding check.
	// Under serve --http on a public address, the name clients use.
	Hosts []string
	// Origin is the origin people reach the console at
	// (scheme://host[:port], that of the OIDC redirect URL). A state
	// change may carry it as its Origin whatever the Host: a reverse
	// proxy on the same machine must send a loopback Host (serve's
	// DNS-rebinding guard), which the browser's Origin then does not
	// name. "" : the Origin must name the request's Host.
	Origin string
	// TLS says the console is reached over https: cookies are Secure and
	// the session cookie takes the __Host- prefix.
	TLS bool
	// OIDC, when set, is how people log in (a team server); otherwise
	// only one-time login links (NewLoginLink) open sessions.
	OIDC *OIDC

	// Broker holds the questions calls wait on (the Approvals page).
	Broker approvals.Broker
	// Tools lists the tools and edits grants (the Tools page); nil hides it.
	Tools Tools
	// Installer reviews and installs modules (the Install page); nil hides it.
	Installer Installer
	// AuditPath is log.audit, the file the Activity page tails ("" : none).
	AuditPath string
	// Metrics is warden's own registry (internal/observe), charted on the
	// Activity page; nil: no charts.
	Metrics prometheus.Gatherer
	// Tasks is the task store (the Tasks page); nil hides it. TaskOwner
	// is the owner key a person's tasks are filed under (the task
	// protocol's, e.g. an OAuth caller's issuer and subject); nil: the
	// subject.
	Tasks     tasks.Store
	TaskOwner func(principal.Principal) string

	// MaxSessions bounds the session table (0: 1024) and
	// MaxSessionsPerSubject one person's sessions in it (0: 8; a new
	// login past it ends that person's oldest); SessionTTL is how long a
	// session lasts after login (0: 12h; LocalSessionTTL for a console
	// opened by login links); LinkTTL how long a login link may wait to
	// be used (0: 5m).
	MaxSessions           int
	MaxSessionsPerSubject int
	SessionTTL            time.Duration
	LinkTTL               time.Duration

	Logger *slog.Logger
	// now replaces time.Now, for tests.
	now func() time.Time
}

// Defaults of Options.
const (
	DefaultMaxSessions           = 1024
	DefaultMaxSessionsPerSubject = 8
	DefaultSessionTTL            = 12 * time.Hour
	DefaultLinkTTL               = 5 * time.Minute
	// LocalSessionTTL is the session lifetime `warden console` and a
	// loopback server.console use: the session is the machine owner's,
	// an admin's, and its cookie lives on a host other local servers
	// share, so it ends sooner.
	LocalSessionTTL = 2 * time.Hour
)

// Console serves the pages. Create it with New.
type Console struct {
	opts     Options
	sessions *sessions
	pages    map[string]*template.Template
	routes   []Route
	mux      *http.ServeMux
	static   fs.FS
	log      *slog.Logger
	// done ends the live streams (Close): a server's Shutdown waits for
	// every response, and a stream would otherwise never end.
	done      chan struct{}
	closeOnce sync.Once
	audit     auditWatch
	auditTail auditTail
	// streams counts each session's live streams (maxStreamsPerSession);
	// streamCheck is how often a stream checks its session lives.
	streams     streamCounts
	streamCheck time.Duration
}

// Route is one pattern the console serves. Public routes are reachable
// without a session (the login endpoints and the static assets); every
// other route refuses a request without one.
type Route struct {
	Method string // GET or POST
	Path   string // under Prefix, e.g. "approvals"
	Public bool
	h      func(http.ResponseWriter, *http.Request, *session)
}

// New returns a console configured by o.
func New(o Options) (*Console, error) {
	if o.Prefix == "" {
		o.Prefix = "/"
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		return nil, fmt.Errorf("console prefix %q must start and end with /", o.Prefix)
	}
	if o.Broker == nil {
		return nil, errors.New("console: no approvals broker")
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerSubject <= 0 {
		o.MaxSessionsPerSubject = DefaultMaxSessionsPerSubject
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.LinkTTL <= 0 {
		o.LinkTTL = DefaultLinkTTL
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.TaskOwner == nil {
		o.TaskOwner = func(p principal.Principal) string { return tasks.OwnerOf(p, "") }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c := &Console{opts: o, log: o.Logger, static: static, done: make(chan struct{}), streamCheck: DefaultStreamCheck,
		sessions: newSessions(o.MaxSessions, o.MaxSessionsPerSubject, o.SessionTTL, o.LinkTTL, o.now)}
	if err := c.parseTemplates(); err != nil {
		return nil, err
	}
	if o.OIDC != nil {
		if err := o.OIDC.init(); err != nil {
			return nil, err
		}
	}
	c.routes = c.table()
	c.mux = http.NewServeMux()
	for _, r := range c.routes {
		c.mux.Handle(r.Method+" "+o.Prefix+r.Path, c.wrap(r))
	}
	// Anything else under the prefix: not found, with the same headers
	// (and no hint whether a session exists).
	c.mux.Handle(o.Prefix, c.headers(http.NotFoundHandler()))
	return c, nil
}

// table is every route. Tests enumerate it (Routes), so a route added
// here is checked for authentication, CSRF and headers without a test of
// its own having to remember it.
func (c *Console) table() []Route {
	return []Route{
		{Method: "GET", Path: "{$}", h: c.home},
		{Method: "GET", Path: "login", Public: true, h: c.loginLink},
		{Method: "GET", Path: "oidc/start", Public: true, h: c.oidcStart},
		{Method: "GET", Path: "oidc/callback", Public: true, h: c.oidcCallback},
		{Method: "GET", Path: "static/{file}", Public: true, h: c.serveStatic},
		{Method: "POST", Path: "logout", h: c.logout},
		{Method: "GET", Path: "approvals", h: c.approvalsPage},
		{Method: "GET", Path: "approvals/list", h: c.approvalsList},
		{Method: "GET", Path: "approvals/events", h: c.approvalsEvents},
		{Method: "POST", Path: "approvals/{id}", h: c.decide},
		{Method: "GET", Path: "tools", h: c.toolsPage},
		{Method: "POST", Path: "tools/grant", h: c.grant},
		{Method: "GET", Path: "install", h: c.installPage},
		{Method: "POST", Path: "install/review", h: c.installReview},
		{Method: "POST", Path: "install/apply", h: c.installApply},
		{Method: "GET", Path: "activity", h: c.activityPage},
		{Method: "GET", Path: "activity/list", h: c.activityList},
		{Method: "GET", Path: "activity/events", h: c.activityEvents},
		{Method: "GET", Path: "tasks", h: c.tasksPage},
		{Method: "POST", Path: "tasks/{id}/cancel", h: c.cancelTask},
	}
}

// Routes lists what the console serves, Path joined to the prefix.
func (c *Console) Routes() []Route {
	out := make([]Route, len(c.routes))
	for i, r := range c.routes {
		r.Path = c.opts.Prefix + r.Path
		r.h = nil
		out[i] = r
	}
	return out
}

// Handler serves the console under its prefix.
func (c *Console) Handler() http.Handler { return c.mux }

// Prefix is the path the console is served under.
func (c *Console) Prefix() string { return c.opts.Prefix }

// Close ends every session, login link and live stream. Call it before
// shutting the HTTP server down, which waits for the streams.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.done) })
	c.sessions.clear()
	c.audit.close()
}
