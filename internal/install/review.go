package install

import (
	"github.com/warden-run/warden/internal/capset"
	"github.com/warden-run/warden/tool"
)

// Missing returns what requested asks for that granted does not cover: the
// gaps a reviewer should look at. It is capset.Missing, the one rule that
// prompts and update diffs use too; see there.
func Missing(requested, granted tool.Capabilities) tool.Capabilities {
	return capset.Missing(requested, granted)
}
