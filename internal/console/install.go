package console

import (
	"context"
	"net/http"
	"strings"
)

// Installer reviews and installs a module from a registry or a URL, with
// the code of `warden install`: the same fetch, signature check, review
// and descriptor findings, and the same approvals a growth or a finding
// needs.
type Installer interface {
	// Review fetches ref (oci://… or https://…) and reviews it; the review
	// is kept under InstallReview.ID until Install or until it expires.
	Review(ctx context.Context, ref string) (InstallReview, error)
	// Install installs the review id, exactly the bytes reviewed. accept
	// approves what a review marks as needing it (more capabilities than
	// the installed version, descriptor findings to confirm).
	Install(ctx context.Context, id string, accept bool) (string, error)
}

// InstallReview is what a person decides on.
type InstallReview struct {
	ID  string
	Ref string
	// Text is the review as `warden install` prints it: module, digest,
	// signature, each tool's capabilities and findings.
	Text string
	// NeedsAccept says the review shows growth or findings that must be
	// approved explicitly; Why says which.
	NeedsAccept bool
	Why         string
}

type installView struct {
	Ref    string
	Review *InstallReview
	Done   string
}

func (c *Console) installPage(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Installer == nil {
		http.NotFound(w, r)
		return
	}
	c.render(w, http.StatusOK, "install", s, installView{})
}

func (c *Console) installReview(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Installer == nil {
		http.NotFound(w, r)
		return
	}
	ref := strings.TrimSpace(r.PostFormValue("ref"))
	v := installView{Ref: ref}
	if c.notAdmin(w, s, "install", v) {
		return
	}
	// Only what a person can paste from a registry or a release page: a
	// path on the server's disk is not the browser's to name.
	if !strings.HasPrefix(ref, "oci://") && !strings.HasPrefix(ref, "https://") {
		c.renderPage(w, http.StatusBadRequest, "install", s, v, "Paste an oci://REGISTRY/REPO:TAG (or @sha256:…) reference or an https:// URL of a .wasm module.", "")
		return
	}
	rv, err := c.opts.Installer.Review(r.Context(), ref)
	if err != nil {
		c.renderPage(w, http.StatusUnprocessableEntity, "install", s, v, "Not installable: "+err.Error(), "")
		return
	}
	v.Review = &rv
	c.render(w, http.StatusOK, "install", s, v)
}

func (c *Console) installApply(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Installer == nil {
		http.NotFound(w, r)
		return
	}
	if c.notAdmin(w, s, "install", installView{}) {
		return
	}
	done, err := c.opts.Installer.Install(r.Context(), r.PostFormValue("review"), r.PostFormValue("accept") == "yes")
	if err != nil {
		c.renderPage(w, http.StatusUnprocessableEntity, "install", s, installView{}, "Not installed: "+err.Error(), "")
		return
	}
	c.log.Info("console: module installed", "by", keyOf(s.who))
	c.renderPage(w, http.StatusOK, "install", s, installView{Done: done}, "", "Installed.")
}
