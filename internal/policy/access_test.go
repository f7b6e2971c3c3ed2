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
	return p.Person(who).Grants(tp, "files", base)
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

// TestWideningFollowsTheModule: a widening role's grant belongs to the
// module the tool's tools.grants entry is bound to, as the entry does: a
// rival module serving a tool of the same name gets nothing from it, nor
// does a tool no entry names (config refuses such a role grant; the
// policy holds without it).
func TestWideningFollowsTheModule(t *testing.T) {
	p := New(load(t, strings.Replace(accessYAML, "access:\n", "access:\n  widen: true\n", 1)))
	tp := p.Tool("files")
	rival, err := tp.Grants("rival")
	if err == nil || !rival.IsZero() {
		t.Fatalf("tools.grants for module rival: %+v %v, want nothing, elsewhere", rival, err)
	}
	if got, _ := p.Person(oauthP("carol")).Grants(tp, "rival", rival); !got.IsZero() {
		t.Errorf("module rival serving files got %+v from a widening role, want nothing", got)
	}
	unnamed := tp
	unnamed.HasGrant = false
	if got, _ := p.Person(oauthP("carol")).Grants(unnamed, "files", tool.Capabilities{}); !got.IsZero() {
		t.Errorf("a tool no tools.grants entry names got %+v from a widening role, want nothing", got)
	}
}

// TestNarrows: without access.widen a member of a role with a grant entry
// for the tool has it decided by the roles (no prompt may add to it), even
// when the role lists exactly what tools.grants does; a non-member, a
// role without an entry for the tool, and widening roles do not.
func TestNarrows(t *testing.T) {
	same := strings.Replace(accessYAML, "files: {fs: {read: [docs, secret]}}",
		"files: {fs: {read: [src, docs], write: [out]}, net: [api.example.com, cdn.example.com], memory: read-write, env: [HOME]}", 1)
	p := New(load(t, same))
	if got, note := filesGrant(t, p, oauthP("carol")); note != "" || len(got.FS.Read) != 2 {
		t.Fatalf("partner with tools.grants' own grant: %+v note %q, want all of it and no note", got, note)
	}
	if !p.Person(oauthP("carol")).Narrows(p.Tool("files")) {
		t.Error("a role whose grant equals tools.grants does not guard the tool: its members could prompt themselves more")
	}
	for _, who := range []principal.Principal{oauthP("dave"), oauthP("alice", "release-managers"), principal.Local} {
		if p.Person(who).Narrows(p.Tool("files")) {
			t.Errorf("%+v: narrowed without a role's grant for the tool", who)
		}
	}
	if p.Person(oauthP("carol")).Narrows(p.Tool("deploy")) {
		t.Error("carol's role has no grant for deploy, yet it counts as narrowed")
	}
	w := New(load(t, strings.Replace(same, "access:\n", "access:\n  widen: true\n", 1)))
	if w.Person(oauthP("carol")).Narrows(w.Tool("files")) {
		t.Error("a widening role narrows")
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
	const is = "https://id.example.com"
	if got, want := p.Approvers("deploy"), []Approver{{Issuer: is, Group: "release-managers"}, {Issuer: is, Subject: "alice"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("approvers of deploy %+v, want %+v (subjects and groups apart, with their issuer)", got, want)
	}
	if got := p.Approvers("deploy")[0].String(); got != `group "release-managers" of https://id.example.com` {
		t.Errorf("approver shown as %q", got)
	}
	if got := p.Approvers("SHIP_it"); len(got) != 2 {
		t.Errorf("approvers of SHIP_it (pattern, case folded as tool names are) %q", got)
	}
	if got := p.Approvers("files"); got != nil {
		t.Errorf("approvers of files %q, want nil (anyone)", got)
	}
	// The entry that matched, as config writes it: the pattern for
	// SHIP_it, the name for deploy.
	if got, want := p.ApproverRoles("SHIP_it"), []ApproverRole{{Role: "release", Pattern: "ship_*"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("roles approving SHIP_it %q, want %q", got, want)
	}
	if got, want := p.ApproverRoles("deploy"), []ApproverRole{{Role: "release", Pattern: "deploy"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("roles approving deploy %q, want %q", got, want)
	}
	if got := p.ApproverRoles("files"); got != nil {
		t.Errorf("roles approving files %q, want none", got)
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

// TestPersonRateTakesEachLowest: a member of a slow role with a large
// burst and a fast role with a small one gets the slow rate and the small
// burst, and the refusal names both lines.
func TestPersonRateTakesEachLowest(t *testing.T) {
	p := New(load(t, strings.Replace(accessYAML, "files: {fs: {read: [docs, secret]}}",
		"files: {fs: {read: [docs, secret]}}\n      rate_limit: {rate: 1/m, burst: 50}", 1)))
	r := p.PersonRate(oauthP("carol", "readers"))
	if r == nil || r.Rate != 1.0/60 || r.Burst != 2 ||
		r.Setting != "access.roles.partners.rate_limit.rate and access.roles.readers.rate_limit.burst" {
		t.Errorf("member of both roles: %+v, want rate 1/m (partners) and burst 2 (readers)", r)
	}
	if r := p.PersonRate(oauthP("carol")); r == nil || r.Burst != 50 || r.Setting != "access.roles.partners.rate_limit" {
		t.Errorf("partner only: %+v", r)
	}
}
