package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
)

// pages are the templates, each parsed with the layout. "login" and
// "continue" are shown without a session.
var pageNames = []string{"login", "continue", "approvals", "tools", "install", "activity", "tasks"}

func (c *Console) parseTemplates() error {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"until": func(t time.Time) string {
			if t.IsZero() {
				return "no deadline"
			}
			d := t.Sub(c.opts.now()).Round(time.Second)
			if d <= 0 {
				return "ending"
			}
			return "ends in " + d.String()
		},
		"join":      strings.Join,
		"difflines": diffLines,
	}
	c.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("console template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	return nil
}

// pageData is what every page's template gets.
type pageData struct {
	Prefix string
	Page   string
	CSRF   string
	Who    string
	Groups []string
	// Admin may change grants and install (session.admin).
	Admin  bool
	Nav    []navItem
	Error  string
	Notice string
	Data   any
}

type navItem struct {
	Path, Label string
	Current     bool
}

func (c *Console) nav(current string) []navItem {
	items := []navItem{{Path: "approvals", Label: "Approvals"}}
	if c.opts.Tools != nil {
		items = append(items, navItem{Path: "tools", Label: "Tools"})
	}
	if c.opts.Installer != nil {
		items = append(items, navItem{Path: "install", Label: "Install"})
	}
	items = append(items, navItem{Path: "activity", Label: "Activity"})
	if c.opts.Tasks != nil {
		items = append(items, navItem{Path: "tasks", Label: "Tasks"})
	}
	for i := range items {
		items[i].Current = items[i].Path == current
	}
	return items
}

// render writes page name with status: data is the page's own, s the
// session (nil on the login pages).
func (c *Console) render(w http.ResponseWriter, status int, name string, s *session, data any) {
	c.renderBlock(w, status, name, "layout", s, data, "", "")
}

// renderPage renders a page with a message beside its data.
func (c *Console) renderPage(w http.ResponseWriter, status int, name string, s *session, data any, errMsg, notice string) {
	c.renderBlock(w, status, name, "layout", s, data, errMsg, notice)
}

// renderBlock writes block of page name: "layout" for the whole page,
// or a fragment a live page fetches ("list").
func (c *Console) renderBlock(w http.ResponseWriter, status int, name, block string, s *session, data any, errMsg, notice string) {
	pd := pageData{Prefix: c.opts.Prefix, Page: name, Nav: c.nav(name), Data: data, Error: errMsg, Notice: notice}
	if s != nil {
		pd.CSRF = s.csrf
		pd.Who = whoOf(s.who)
		pd.Groups = s.who.Groups
		pd.Admin = s.admin
	} else {
		pd.Nav = nil
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, block, pd); err != nil {
		c.log.Error("console: page not rendered", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// whoOf names a person as the console shows them.
func whoOf(p principal.Principal) string {
	if p.Via == principal.ViaOAuth && p.Issuer != "" {
		return p.Subject + " (" + p.Issuer + ")"
	}
	return p.Subject
}

// keyOf is the principal key a decision is recorded under: the subject of
// its issuer, the form approvers are named in (approvals.Decider).
func keyOf(p principal.Principal) string {
	by, _ := approvals.Decider(p)
	return by
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, _ *session) {
	http.Redirect(w, r, c.opts.Prefix+"approvals", http.StatusSeeOther)
}

// serveStatic serves the embedded script and stylesheet.
func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request, _ *session) {
	name := r.PathValue("file")
	data, err := fs.ReadFile(c.static, name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}
