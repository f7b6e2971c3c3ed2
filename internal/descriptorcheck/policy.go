package descriptorcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/warden-run/warden/internal/configkey"

	"github.com/warden-run/warden/tool"
)

// Policy is what findings do (security.descriptor_checks).
type Policy string

const (
	// Auto is the default: Confirm for a module installed from a registry
	// or a URL, Warn for a local file, Warn at load.
	Auto Policy = "auto"
	// Warn shows the findings and goes on.
	Warn Policy = "warn"
	// Confirm shows them and needs an explicit yes for them: the
	// interactive prompt, or --accept-findings beside --yes.
	Confirm Policy = "confirm"
	// Refuse refuses a module with any finding, at install and at load.
	Refuse Policy = "refuse"
)

// ParsePolicy reads a policy as config spells it ("" is Auto).
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return Auto, nil
	case Auto, Warn, Confirm, Refuse:
		return p, nil
	}
	return "", fmt.Errorf("must be auto, warn, confirm or refuse, got %q", s)
}

// ForInstall is the policy p means for a module being installed; fetched
// is true for one from a registry or a URL.
func (p Policy) ForInstall(fetched bool) Policy {
	if p != Auto {
		return p
	}
	if fetched {
		return Confirm
	}
	return Warn
}

// AtLoad is what p does to findings when a module loads: Refuse makes
// them a load error; every other policy logs them (they were shown at
// install, and a person said yes to them there).
func (p Policy) AtLoad() Policy {
	if p == Refuse {
		return Refuse
	}
	return Warn
}

// Digest is the sha256 of the parts of d a client is sent, as a reviewer
// saw them: its name, title, description, schemas, annotations, icons,
// tags, category and task support (an icon URL or a tag changed after
// review is a change too; so is a tool that starts to run as an MCP task,
// out of the interactive timeout's reach), in
// canonical JSON (keys sorted, no insignificant space). It is what the
// lock (tools.descriptors) records: a module whose descriptor changes
// without its bytes changing (an Extism plugin describing itself from its
// config) or with them (a rebuild under the same pin policy) no longer
// matches what was reviewed.
func Digest(d tool.Descriptor) string {
	canon := map[string]any{
		"name":         d.Name,
		"title":        d.Title,
		"description":  d.Description,
		"inputSchema":  canonical(d.InputSchema),
		"outputSchema": canonical(d.OutputSchema),
		"annotations":  d.Annotations,
		"icons":        d.Icons,
		"tags":         d.Tags,
		"category":     d.Category,
	}
	// Task support enters the digest only when it is not the default:
	// every descriptor locked before tools could declare it says
	// forbidden, and keeps its digest.
	if ts := d.TaskSupport(); ts != tool.TaskForbidden {
		canon["taskSupport"] = ts
	}
	b, err := json.Marshal(canon) // map keys are sorted; so are nested ones
	if err != nil {
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonical decodes a schema so that Marshal writes it with sorted keys;
// an absent or invalid schema is nil, which never equals a valid one.
func canonical(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return v
}

// ErrRefused marks a module refused because its descriptors have findings
// and the policy is Refuse.
var ErrRefused = errors.New("refused by security.descriptor_checks: refuse")

// ErrChanged marks a module whose tools describe themselves otherwise than
// the descriptors locked when a person reviewed them (tools.descriptors).
var ErrChanged = errors.New("descriptor differs from the one reviewed")

// Drift is one tool whose descriptor digest differs from the locked one.
type Drift struct {
	Tool          string // folded, as the lock names it
	Locked, Found string // digests; Locked is "" for a tool the lock does not name
}

// Digests are the descriptor digests of tools by folded name: what the
// lock records.
func Digests(tools []tool.Descriptor) map[string]string {
	out := map[string]string{}
	for _, d := range tools {
		out[configkey.Fold(d.Name)] = Digest(d)
	}
	return out
}

// Compare lists the tools whose digest in found differs from locked, or
// that locked does not name. A nil lock (a module installed before
// descriptors were locked) has no drift.
func Compare(locked, found map[string]string) []Drift {
	if locked == nil {
		return nil
	}
	var out []Drift
	for _, name := range slices.Sorted(maps.Keys(found)) {
		if locked[name] != found[name] {
			out = append(out, Drift{Tool: name, Locked: locked[name], Found: found[name]})
		}
	}
	return out
}

// Load is what loading module does with its tools' descriptors: one that
// differs from the lock (locked, tools.descriptors.<module>) is an error
// wrapping ErrChanged that names the tool, both digests and review, the
// command that reviews it again; under Refuse a finding is an error
// wrapping ErrRefused; otherwise the findings are returned, to be logged.
// others are the names of the tools other modules serve.
func Load(module string, tools []tool.Descriptor, others []string, policy string, locked map[string]string, review string) ([]Finding, error) {
	if drift := Compare(locked, Digests(tools)); len(drift) > 0 {
		var parts []string
		for _, d := range drift {
			locked := d.Locked
			if locked == "" {
				locked = "none (a tool added since)"
			}
			parts = append(parts, fmt.Sprintf("tool %s: tools.descriptors.%s.%s is %s, it now describes itself as %s",
				d.Tool, configkey.Fold(module), d.Tool, locked, d.Found))
		}
		return nil, fmt.Errorf("%w: %s; review it with `%s`", ErrChanged, strings.Join(parts, "; "), review)
	}
	p, err := ParsePolicy(policy)
	if err != nil {
		return nil, err
	}
	findings := Check(tools, others)
	if p.AtLoad() == Refuse && len(findings) > 0 {
		return nil, fmt.Errorf("%w: %d finding(s), first %s", ErrRefused, len(findings), findings[0])
	}
	return findings, nil
}
