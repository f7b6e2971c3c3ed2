package descriptorcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

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

// Digest is the sha256 of the parts of d a model reads, as a reviewer saw
// them: its name, title, description, schemas and annotations, in
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
