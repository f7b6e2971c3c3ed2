package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// access is config's access section, resolved once per config load
// (RATIONALE.md, "Per-person policy").
type access struct {
	widen bool
	file  string // config.File, for the lines refusals name
	rate  *mcpserver.RateLimit
	roles []role // by name
}

// role is one access.roles entry.
type role struct {
	name     string
	issuer   string
	subjects map[string]bool
	groups   map[string]bool
	grants   map[string]tool.Capabilities // by config.ToolKey
	approve  []string
	rate     *mcpserver.RateLimit
	// memCapped says the role caps memory:// resources to memTopics (none
	// when empty): config's memory_resources.
	memCapped bool
	memTopics []string
}

func newAccess(cfg *config.Config) access {
	a := access{
		widen: cfg.Access.Widen,
		file:  cfg.File,
		rate:  runlimits.Rate(cfg.Access.RateLimit.Bucket("access.rate_limit")),
	}
	for _, name := range cfg.Access.RoleNames() {
		r := cfg.Access.Roles[name]
		issuer := r.Issuer
		if issuer == "" && len(cfg.Server.OAuth.Issuers) == 1 {
			// The one issuer trusted: a token of another is no member
			// even should one be trusted later (config then requires
			// the role to name its issuer).
			issuer = cfg.Server.OAuth.Issuers[0].Issuer
		}
		ro := role{
			name:     name,
			issuer:   issuer,
			subjects: make(map[string]bool, len(r.Subjects)),
			groups:   make(map[string]bool, len(r.Groups)),
			grants:   make(map[string]tool.Capabilities, len(r.Grants)),
			approve:  slices.Clone(r.Approve),
			rate:     runlimits.Rate(r.RateLimit.Bucket("access.roles." + name + ".rate_limit")),
		}
		ro.memTopics, ro.memCapped = r.MemoryResourceCap()
		for _, s := range r.Subjects {
			ro.subjects[s] = true
		}
		for _, g := range r.Groups {
			ro.groups[g] = true
		}
		for toolName := range r.Grants {
			key := config.ToolKey(toolName)
			ro.grants[key], _ = r.RoleGrant(toolName)
		}
		a.roles = append(a.roles, ro)
	}
	return a
}

// member reports whether p is a member of r: an OAuth principal of r's
// issuer (any trusted one when r names none) whose subject r lists, or
// one of whose groups it lists. Names compare byte for byte.
func (r *role) member(p principal.Principal) bool {
	if p.Via != principal.ViaOAuth || (r.issuer != "" && r.issuer != p.Issuer) {
		return false
	}
	if r.subjects[p.Subject] {
		return true
	}
	for _, g := range p.Groups {
		if r.groups[g] {
			return true
		}
	}
	return false
}

// Person is what access.roles says about one caller: the roles they are a
// member of, resolved from their principal at each call.
type Person struct {
	p     principal.Principal
	a     *access
	roles []*role
}

// Person returns the per-person policy of the caller p. A principal that
// is not OAuth's is a member of no role.
func (p *Policy) Person(pr principal.Principal) Person {
	out := Person{p: pr, a: &p.access}
	for i := range p.access.roles {
		if r := &p.access.roles[i]; r.member(pr) {
			out.roles = append(out.roles, r)
		}
	}
	return out
}

// Roles names the roles the person is a member of, sorted.
func (ps Person) Roles() []string {
	var names []string
	for _, r := range ps.roles {
		names = append(names, r.name)
	}
	return names
}

// Grants applies the person's roles' overlays of the tool whose policy is
// tp, served by the module called module, to grants, what tools.grants
// gives the tool there (tp.Grants(module)). Without access.widen, each
// overlay narrows: the person keeps only what grants and every overlay of
// the tool list (values compared as tools.grants compares them). With it,
// each overlay adds, but only to the module the tool's tools.grants entry
// is bound to: a role's grant, like the entry it widens, belongs to a
// module, so a tool of the same name served by another module (or a tool
// no entry names) gets nothing from it. note, when the overlays took
// something away, says which config lines did and which would allow it,
// for the capability's refusal; "" otherwise.
func (ps Person) Grants(tp ToolPolicy, module string, grants tool.Capabilities) (out tool.Capabilities, note string) {
	out = grants
	var lines []string
	for _, r := range ps.roles {
		o, ok := r.grants[tp.Key]
		if !ok {
			continue
		}
		if ps.a.widen {
			if tp.HasGrant && tp.Bound == module {
				out = union(out, o)
			}
			continue
		}
		narrowed := intersect(out, o)
		if !sameCaps(narrowed, out) {
			lines = append(lines, "access.roles."+r.name+".grants."+tp.Key)
		}
		out = narrowed
	}
	if len(lines) == 0 {
		return out, ""
	}
	file := ps.a.file
	if file == "" {
		file = "config.yaml"
	}
	verb, member := "narrows", "a member of the role"
	if len(lines) > 1 {
		verb, member = "narrow", "a member of those roles"
	}
	all := strings.Join(lines, " and ")
	return out, fmt.Sprintf("%s %s tools.grants.%s for %s, %s (access.widen is false), in %s: "+
		"the line that would allow it lists the value under %s too", all, verb, tp.Key, ps.who(), member, file, all)
}

// Narrows reports whether the person's roles have a say in what the tool
// whose policy is tp may do: without access.widen, some role of theirs
// has a grant entry for it. Then the roles' grants are all the tool may
// have for them, even where an overlay took nothing away (it lists what
// tools.grants does): a permission prompt must not give them more, or a
// member could answer their own prompt for what no role lists.
func (ps Person) Narrows(tp ToolPolicy) bool {
	if ps.a.widen {
		return false
	}
	for _, r := range ps.roles {
		if _, ok := r.grants[tp.Key]; ok {
			return true
		}
	}
	return false
}

// MemoryResource says why the person may not read topic as a memory://
// resource, "" when they may: each of their roles that sets
// memory_resources must allow it (the topic or one above it listed). Such
// a read runs as no tool, so no tool's grant or overlay limits it; this
// cap does, with or without access.widen.
func (ps Person) MemoryResource(topic string) string {
	for _, r := range ps.roles {
		if !r.memCapped || (len(r.memTopics) > 0 && memory.Granted(r.memTopics, topic)) {
			continue
		}
		file := ps.a.file
		if file == "" {
			file = "config.yaml"
		}
		allowed := "no topic"
		if len(r.memTopics) > 0 {
			allowed = fmt.Sprintf("only the topics %q", r.memTopics)
		}
		return fmt.Sprintf("memory://%s is not readable by %s: access.roles.%s.memory_resources allows %s to the role's members (%s)",
			topic, ps.who(), r.name, allowed, file)
	}
	return ""
}

// who names the person in messages.
func (ps Person) who() string {
	return fmt.Sprintf("%q", ps.p.Subject)
}

// Rate returns the person's own rate limit: the lowest rate and the
// lowest burst among their roles' rate_limit, each taken apart (a role
// with a slow rate but a large burst does not lend its burst to a role
// whose burst is small), else access.rate_limit; nil for a caller that is
// not an OAuth principal, or when neither is set.
func (ps Person) Rate() *mcpserver.RateLimit {
	if ps.p.Via != principal.ViaOAuth {
		return nil
	}
	var slowest, smallest *mcpserver.RateLimit
	for _, r := range ps.roles {
		if r.rate == nil {
			continue
		}
		if slowest == nil || r.rate.Rate < slowest.Rate {
			slowest = r.rate
		}
		if smallest == nil || r.rate.Burst < smallest.Burst {
			smallest = r.rate
		}
	}
	switch {
	case slowest == nil:
		return ps.a.rate
	case slowest.Burst == smallest.Burst:
		return slowest
	}
	return &mcpserver.RateLimit{Rate: slowest.Rate, Burst: smallest.Burst,
		Setting: slowest.Setting + ".rate and " + smallest.Setting + ".burst"}
}

// PersonRate is Person(p).Rate(): the per-person bucket mcpserver takes
// (mcpserver.RateLimits.PerPerson).
func (p *Policy) PersonRate(pr principal.Principal) *mcpserver.RateLimit {
	if pr.Via != principal.ViaOAuth {
		return nil
	}
	return p.Person(pr).Rate()
}

// Approver is one who may answer a tool's questions: an OAuth subject or
// a group (one of the two), of Issuer. Subjects and groups are kept apart,
// and with their issuer, so that a subject named like a group, or a name
// of another issuer, is never taken for them: compare a person with
// Policy.MayApprove, not with these names.
type Approver struct {
	Issuer         string
	Subject, Group string
}

// String names the approver for a page: subject "alice" of
// https://id.example.com, group "ops" of ...
func (a Approver) String() string {
	kind, name := "subject", a.Subject
	if a.Group != "" {
		kind, name = "group", a.Group
	}
	return fmt.Sprintf("%s %q of %s", kind, name, a.Issuer)
}

// approversOf lists the subjects and groups of the roles whose approve
// patterns match the tool called name, with their issuer, sorted, once
// each; nil when no role names it.
func (a *access) approversOf(name string) []Approver {
	key := config.ToolKey(name)
	var out []Approver
	for _, r := range a.roles {
		if !slices.ContainsFunc(r.approve, func(pat string) bool { return config.MatchTool(pat, key) }) {
			continue
		}
		for s := range r.subjects {
			out = append(out, Approver{Issuer: r.issuer, Subject: s})
		}
		for g := range r.groups {
			out = append(out, Approver{Issuer: r.issuer, Group: g})
		}
	}
	slices.SortFunc(out, func(x, y Approver) int {
		return strings.Compare(x.Issuer+"\x00"+x.Subject+"\x00"+x.Group, y.Issuer+"\x00"+y.Subject+"\x00"+y.Group)
	})
	return slices.Compact(out)
}

// MayApprove reports whether p may answer the questions of the tool called
// name: anyone when no role's approve names the tool (Approvers is nil),
// the check a console's decision must pass,
// else a member of a role whose approve does, checked with the role's
// issuer and its subjects and groups apart, so that a subject named like
// a group (or of another issuer) is not taken for its members.
func (p *Policy) MayApprove(name string, pr principal.Principal) bool {
	key := config.ToolKey(name)
	named := false
	for i := range p.access.roles {
		r := &p.access.roles[i]
		if !slices.ContainsFunc(r.approve, func(pat string) bool { return config.MatchTool(pat, key) }) {
			continue
		}
		named = true
		if r.member(pr) {
			return true
		}
	}
	return !named
}

// ApproverRole is a role whose approve list names a tool: the role's name
// and the entry of its approve list that matched, as config writes it (the
// tool's name, or a pattern such as "deploy*" or "*").
type ApproverRole struct {
	Role, Pattern string
}

// ApproverRoles names the access.roles whose approve lists name the tool
// called name, in config's order, each with the first entry that matched:
// the lines a message points to when a caller outside them is not asked
// (whose member would be). nil when no role names the tool.
func (p *Policy) ApproverRoles(name string) []ApproverRole {
	key := config.ToolKey(name)
	var out []ApproverRole
	for _, r := range p.access.roles {
		if i := slices.IndexFunc(r.approve, func(pat string) bool { return config.MatchTool(pat, key) }); i >= 0 {
			out = append(out, ApproverRole{Role: r.name, Pattern: r.approve[i]})
		}
	}
	return out
}

// intersect is what both a and b grant: list values both hold (compared
// as tools.grants compares them), the lesser memory level. Topics: none
// listed means every topic, so the topics both allow; when the two lists
// share no topic, memory is none (an empty list would mean all of them).
func intersect(a, b tool.Capabilities) tool.Capabilities {
	out := tool.Capabilities{
		FS:     tool.FSAccess{Read: common(a.FS.Read, b.FS.Read, false), Write: common(a.FS.Write, b.FS.Write, false)},
		Memory: minMemory(a.Memory, b.Memory),
		LSP:    common(a.LSP, b.LSP, true),
		Net:    common(a.Net, b.Net, true),
		Env:    common(a.Env, b.Env, true),
		Client: common(a.Client, b.Client, true),
	}
	switch {
	case len(a.MemoryTopics) == 0:
		out.MemoryTopics = slices.Clone(b.MemoryTopics)
	case len(b.MemoryTopics) == 0:
		out.MemoryTopics = slices.Clone(a.MemoryTopics)
	default:
		out.MemoryTopics = common(a.MemoryTopics, b.MemoryTopics, false)
		if len(out.MemoryTopics) == 0 {
			out.Memory = tool.MemoryNone
		}
	}
	if out.Memory == tool.MemoryNone {
		out.MemoryTopics = nil
	}
	return out
}

// union is what a or b grants. Topics: a side that grants memory without
// topics grants every topic.
func union(a, b tool.Capabilities) tool.Capabilities {
	out := tool.Capabilities{
		FS:     tool.FSAccess{Read: joined(a.FS.Read, b.FS.Read, false), Write: joined(a.FS.Write, b.FS.Write, false)},
		Memory: maxMemory(a.Memory, b.Memory),
		LSP:    joined(a.LSP, b.LSP, true),
		Net:    joined(a.Net, b.Net, true),
		Env:    joined(a.Env, b.Env, true),
		Client: joined(a.Client, b.Client, true),
	}
	allTopics := (a.Memory != tool.MemoryNone && len(a.MemoryTopics) == 0) || (b.Memory != tool.MemoryNone && len(b.MemoryTopics) == 0)
	if !allTopics {
		out.MemoryTopics = joined(a.MemoryTopics, b.MemoryTopics, false)
	}
	return out
}

func same(fold bool) func(x, y string) bool {
	if fold {
		return strings.EqualFold
	}
	return func(x, y string) bool { return x == y }
}

// common lists the values of a that b holds too, in a's order.
func common(a, b []string, fold bool) []string {
	eq := same(fold)
	var out []string
	for _, v := range a {
		if slices.ContainsFunc(b, func(w string) bool { return eq(v, w) }) {
			out = append(out, v)
		}
	}
	return out
}

// joined lists a's values, then those of b that a does not hold.
func joined(a, b []string, fold bool) []string {
	eq := same(fold)
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.ContainsFunc(out, func(w string) bool { return eq(v, w) }) {
			out = append(out, v)
		}
	}
	return out
}

func memoryRank(m tool.MemoryAccess) int {
	switch m {
	case tool.MemoryRead:
		return 1
	case tool.MemoryReadWrite:
		return 2
	}
	return 0
}

func minMemory(a, b tool.MemoryAccess) tool.MemoryAccess {
	if memoryRank(a) <= memoryRank(b) {
		return a
	}
	return b
}

func maxMemory(a, b tool.MemoryAccess) tool.MemoryAccess {
	if memoryRank(a) >= memoryRank(b) {
		return a
	}
	return b
}

func sameCaps(a, b tool.Capabilities) bool {
	return slices.Equal(a.FS.Read, b.FS.Read) && slices.Equal(a.FS.Write, b.FS.Write) && a.Memory == b.Memory &&
		slices.Equal(a.MemoryTopics, b.MemoryTopics) && slices.Equal(a.LSP, b.LSP) && slices.Equal(a.Net, b.Net) &&
		slices.Equal(a.Env, b.Env) && slices.Equal(a.Client, b.Client)
}
