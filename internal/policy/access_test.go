package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/tool"
)

const accessOAuth = `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers:
      - {issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}
`

const accessYAML = accessOAuth + `tools:
  grants:
    files: {fs: {read: [src, docs], write: [out]}, net: [api.example.com, cdn.example.com], memory: read-write, env: [HOME]}
  gates:
    deploy: {action: confirm}
access:
  rate_limit: {rate: 10/s, burst: 10}
  roles:
    readers:
      groups: [readers]
      grants:
        files: {fs: {read: [src]}, net: [API.example.com], memory: read}
      rate_limit: {rate: 1/s, burst: 2}
    partners:
      subjects: [carol]
      grants:
        files: {fs: {read: [docs, secret]}}
    release:
      subjects: [alice]
      groups: [release-managers]
      approve: [deploy, "ship_*"]
`

func oauthP(subject string, groups ...string) principal.Principal {
	return principal.Principal{Subject: subject, Via: principal.ViaOAuth, Issuer: "https://id.example.com", Groups: groups}
}

func filesGrant(t *testing.T, p *Policy, who principal.Principal) (tool.Capabilities, string) {
	t.Helper()
	tp := p.Tool("files")
	base, err := tp.Grants("files")
	if err != nil {
		t.Fatal(err)
	}
	return p.Person(who).Grants(tp, base)
}

// TestOverlayNarrows: without access.widen a role's grants keep of
// tools.grants only what both list (net compared ignoring case, as
// tools.grants compares it), the lesser memory level; a value only the
// role lists is not added; a member of two roles gets what all of them
// leave; someone in no role, and every caller that is not OAuth's, keeps
// tools.grants. The note names the line that narrowed it.
func TestOverlayNarrows(t *testing.T) {
	cfg := load(t, accessYAML)
	p := New(cfg)
	base, _ := p.Tool("files").Grants("files")

	got, note := filesGrant(t, p, oauthP("bob", "readers"))
	want := tool.Capabilities{FS: tool.FSAccess{Read: []string{"src"}}, Net: []string{"api.example.com"}, Memory: tool.MemoryRead}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reader's grant %+v, want %+v", got, want)
	}
	for _, s := range []string{"access.roles.readers.grants.files narrows tools.grants.files", `"bob"`, cfg.File} {
		if !strings.Contains(note, s) {
			t.Errorf("note %q lacks %q", note, s)
		}
	}

	got, _ = filesGrant(t, p, oauthP("carol"))
	if want := (tool.Capabilities{FS: tool.FSAccess{Read: []string{"docs"}}}); !reflect.DeepEqual(got, want) {
		t.Errorf("partner's grant %+v, want %+v (secret is the role's only: not added)", got, want)
	}
	got, _ = filesGrant(t, p, oauthP("carol", "readers"))
	if !got.IsZero() {
		t.Errorf("a member of both roles keeps %+v, want what both leave: nothing", got)
	}
	for _, who := range []principal.Principal{oauthP("dave", "others"), oauthP("alice"), principal.Local, {Subject: "token", Via: principal.ViaToken},
		{Subject: "bob", Via: principal.ViaLocal, Groups: []string{"readers"}}} {
		if got, note := filesGrant(t, p, who); !reflect.DeepEqual(got, base) || note != "" {
			t.Errorf("%+v: grant %+v note %q, want tools.grants' %+v", who, got, note, base)
		}
	}
}

// TestOverlayWidens: with access.widen a role's grants add to tools.grants
// for its members, and only for them.
func TestOverlayWidens(t *testing.T) {
	p := New(load(t, strings.Replace(accessYAML, "access:\n", "access:\n  widen: true\n", 1)))
	got, note := filesGrant(t, p, oauthP("carol"))
	if !reflect.DeepEqual(got.FS.Read, []string{"src", "docs", "secret"}) || note != "" {
		t.Errorf("partner's fs.read %v note %q, want src docs secret", got.FS.Read, note)
	}
	if got, _ := filesGrant(t, p, oauthP("dave")); !reflect.DeepEqual(got.FS.Read, []string{"src", "docs"}) {
		t.Errorf("a non-member got fs.read %v", got.FS.Read)
	}
}

// TestMemoryTopicsNarrow: a topic list means those topics only, none means
// all; two lists that share no topic leave no memory at all (an empty list
// would mean every topic).
func TestMemoryTopicsNarrow(t *testing.T) {
	all := tool.Capabilities{Memory: tool.MemoryReadWrite}
	notes := tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"notes"}}
	logs := tool.Capabilities{Memory: tool.MemoryRead, MemoryTopics: []string{"logs"}}
	if got := intersect(all, notes); got.Memory != tool.MemoryReadWrite || !reflect.DeepEqual(got.MemoryTopics, []string{"notes"}) {
		t.Errorf("all ∩ notes = %+v", got)
	}
	if got := intersect(notes, logs); got.Memory != tool.MemoryNone || got.MemoryTopics != nil {
		t.Errorf("notes ∩ logs = %+v, want no memory", got)
	}
	if got := union(notes, all); got.MemoryTopics != nil || got.Memory != tool.MemoryReadWrite {
		t.Errorf("notes ∪ all = %+v, want every topic", got)
	}
}

// TestApprovers: a tool some role's approve names is answered by its
// subjects and groups; others by anyone. MayApprove tells a subject from a
// group of the same name, and an issuer from another.
func TestApprovers(t *testing.T) {
	p := New(load(t, accessYAML))
	if got, want := p.Approvers("deploy"), []string{"alice", "release-managers"}; !reflect.DeepEqual(got, want) {
		t.Errorf("approvers of deploy %q, want %q", got, want)
	}
	if got := p.Approvers("SHIP_it"); len(got) != 2 {
		t.Errorf("approvers of SHIP_it (pattern, case folded as tool names are) %q", got)
	}
	if got := p.Approvers("files"); got != nil {
		t.Errorf("approvers of files %q, want nil (anyone)", got)
	}
	for _, tc := range []struct {
		who  principal.Principal
		want bool
	}{
		{oauthP("alice"), true},
		{oauthP("eve", "release-managers"), true},
		{oauthP("release-managers"), false}, // a subject named like the group
		{oauthP("eve", "Release-Managers"), false},
		{oauthP("eve", "release-managers "), false},
		{principal.Principal{Subject: "alice", Via: principal.ViaOAuth, Issuer: "https://other.example.com"}, false},
		{principal.Principal{Subject: "alice", Via: principal.ViaLocal}, false},
	} {
		if got := p.MayApprove("deploy", tc.who); got != tc.want {
			t.Errorf("%+v may approve deploy: %v, want %v", tc.who, got, tc.want)
		}
	}
	if !p.MayApprove("files", principal.Local) {
		t.Error("files names no approvers: anyone may answer")
	}
}

// TestPersonRate: the lowest rate of the person's roles, else
// access.rate_limit; none for callers that are not OAuth's.
func TestPersonRate(t *testing.T) {
	p := New(load(t, accessYAML))
	if r := p.PersonRate(oauthP("bob", "readers")); r == nil || r.Rate != 1 || r.Setting != "access.roles.readers.rate_limit" {
		t.Errorf("reader's rate %+v", r)
	}
	if r := p.PersonRate(oauthP("dave")); r == nil || r.Rate != 10 || r.Setting != "access.rate_limit" {
		t.Errorf("default rate %+v", r)
	}
	if r := p.PersonRate(principal.Local); r != nil {
		t.Errorf("local rate %+v", r)
	}
	if p.ServerRateLimits().PerPerson == nil {
		t.Error("the server's rate limits lack the per-person bucket")
	}
}
