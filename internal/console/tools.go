package console

import (
	"context"
	"net/http"
	"strings"
)

// Tools is what the Tools page reads and the grant editor it drives. The
// command line implements it with the code of `warden tools` and
// `warden grant`, so the page shows what the CLI shows and a grant the
// CLI refuses (a never-grantable value, a value config refuses) is refused
// here in the same words.
type Tools interface {
	// List is the tools as `warden tools` lists them.
	List(ctx context.Context) (ToolList, error)
	// Grant runs `warden grant TOOL [--module MODULE] ARGS...`: with apply
	// false it only returns the change to config.yaml it would make (a
	// unified diff); with apply true it also writes it, keeping comments.
	Grant(ctx context.Context, req GrantRequest, apply bool) (GrantResult, error)
}

// ToolList is the Tools page's content.
type ToolList struct {
	Tools []ToolInfo
	// Problems are the lines `warden tools` prints under its table: load
	// failures, rejected and refused tools, unusable grants, missing
	// language servers.
	Problems []string
}

// ToolInfo is one served tool.
type ToolInfo struct {
	Name, Module, Digest string
	// Source and Signer are from the module's install record ("" when it
	// was copied in by hand).
	Source, Signer                 string
	Requested, Granted, NotGranted string
	// Gates are the tools.gates rules matching the tool; Limits its
	// effective limits, as KEY=VALUE.
	Gates, Limits []string
}

// GrantRequest is a grant as `warden grant` takes it.
type GrantRequest struct {
	Tool, Module string
	Args         []string // KEY=VALUE[,VALUE]
}

// GrantResult is what a grant changes.
type GrantResult struct {
	Diff     string // unified diff of config.yaml
	Warnings []string
	// Granted is the tool's grant afterwards, as `warden grant` prints it.
	Granted string
}

type toolsView struct {
	List   ToolList
	Form   GrantRequest
	Args   string
	Result *GrantResult
	Apply  bool
}

func (c *Console) toolsPage(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Tools == nil {
		http.NotFound(w, r)
		return
	}
	v := toolsView{Form: GrantRequest{Tool: r.URL.Query().Get("tool")}}
	list, err := c.opts.Tools.List(r.Context())
	v.List = list
	if err != nil {
		c.renderPage(w, http.StatusInternalServerError, "tools", s, v, "The tools could not be listed: "+err.Error(), "")
		return
	}
	c.render(w, http.StatusOK, "tools", s, v)
}

// grant previews (action=preview) or writes (action=apply) a grant.
func (c *Console) grant(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Tools == nil {
		http.NotFound(w, r)
		return
	}
	req := GrantRequest{Tool: strings.TrimSpace(r.PostFormValue("tool")), Module: strings.TrimSpace(r.PostFormValue("module")),
		Args: strings.Fields(r.PostFormValue("grants"))}
	apply := r.PostFormValue("action") == "apply"
	v := toolsView{Form: req, Args: strings.Join(req.Args, " "), Apply: apply}
	list, _ := c.opts.Tools.List(r.Context())
	v.List = list
	if c.notAdmin(w, s, "tools", v) {
		return
	}
	if req.Tool == "" || len(req.Args) == 0 {
		c.renderPage(w, http.StatusBadRequest, "tools", s, v, "Name a tool and at least one KEY=VALUE to grant.", "")
		return
	}
	res, err := c.opts.Tools.Grant(r.Context(), req, apply)
	if err != nil {
		c.renderPage(w, http.StatusUnprocessableEntity, "tools", s, v, "Not granted: "+err.Error(), "")
		return
	}
	v.Result = &res
	notice := "Preview: config.yaml is not changed until you apply."
	if apply {
		c.log.Info("console: grant written", "tool", req.Tool, "by", keyOf(s.who))
		v.List, _ = c.opts.Tools.List(r.Context())
		notice = "Granted: config.yaml was changed as shown."
	}
	c.renderPage(w, http.StatusOK, "tools", s, v, "", notice)
}

// diffLine is one line of a diff with its class for the stylesheet.
type diffLine struct{ Class, Text string }

func diffLines(diff string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		class := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out = append(out, diffLine{class, l})
	}
	return out
}
