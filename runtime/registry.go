package runtime

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/tool"
)

// Registry is the set of loaded modules and the tools they serve, looked up
// by name.
//
// The tool table is a pure function of the set of loaded modules and which
// of them are pinned; the order they were loaded in plays no part. Tool
// names are unique ignoring case. When several modules describe the same
// name (ignoring case), the one pinned module among them serves it and the
// others' tools are refused; when none or several are pinned, all of them
// are refused. A refused tool is not served, and Refused says why. So a
// module dropped into the tools dir later can never displace a pinned tool,
// and removing one side of a collision brings the other back.
type Registry struct {
	mu      sync.RWMutex
	modules map[string]*Module // by module name
	tools   map[string]*Tool   // the tools served, by name
	refused []Refusal          // sorted by folded tool name, then module
}

// Refusal is a tool the registry does not serve because another module
// describes the same name.
type Refusal struct {
	// Tool is the name as the refused module spells it.
	Tool string `json:"tool"`
	// Module is the refused module.
	Module string `json:"module"`
	// Modules lists every module describing the name (ignoring case), sorted.
	Modules []string `json:"modules"`
	// ServedBy is the pinned module serving the name, "" when none does.
	ServedBy string `json:"servedBy,omitempty"`
	// Reason says why and what to do about it.
	Reason string `json:"reason"`
}

func (r Refusal) Error() string { return r.Reason }

// pinState is whether a module's bytes matched its pin when it was put in
// the registry. Only the Registry changes it, under its lock, so that the
// tool table always agrees with it.
type pinState struct{ atomic.Bool }

// Pinned reports whether the module was pinned (its sha256 verified
// against an approved pin) when the registry last heard of it; false for a
// module that was never put in a Registry.
func (m *Module) Pinned() bool { return m.pinned.Load() }

// ValidModuleName reports whether name may name a module: the rule of tool
// names (tool.ValidName), because module names become config keys
// (tools.pins.<module>, tools.limits.<module>, grants' module field).
func ValidModuleName(name string) bool { return tool.ValidName(name) }

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{modules: make(map[string]*Module), tools: make(map[string]*Tool)}
}

// Put adds m, replacing a loaded module of the same name (hot reload);
// pinned says whether m's bytes matched an approved pin. It returns the
// refusals that involve m after the change (m's tools refused, or tools of
// other modules refused because m describes the same name). The replaced
// module, if any, is returned so the caller can close it once its calls
// have finished.
func (g *Registry) Put(m *Module, pinned bool) (replaced *Module, refused []Refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	replaced = g.modules[m.name]
	m.pinned.Store(pinned)
	g.modules[m.name] = m
	g.rebuild()
	return replaced, g.involving(m.name)
}

// SetPinned records whether the loaded module named name is pinned (after a
// config change added, removed or changed its pin) and reports whether that
// changed anything.
func (g *Registry) SetPinned(name string, pinned bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.modules[name]
	if m == nil || m.pinned.Load() == pinned {
		return false
	}
	m.pinned.Store(pinned)
	g.rebuild()
	return true
}

// Remove drops the module named name and returns it (nil if absent). Tools
// it was refused against are served again if nothing else stands in their
// way.
func (g *Registry) Remove(name string) *Module {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.modules[name]
	if m == nil {
		return nil
	}
	delete(g.modules, name)
	g.rebuild()
	return m
}

// RemoveIf drops the module named name only if it is m (not a version that
// replaced it since), and reports whether it did.
func (g *Registry) RemoveIf(name string, m *Module) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.modules[name] != m {
		return false
	}
	delete(g.modules, name)
	g.rebuild()
	return true
}

// foldName is the key tool names are unique under.
func foldName(name string) string { return configkey.Fold(name) }

// rebuild computes the tool table from the modules alone. Callers hold mu.
func (g *Registry) rebuild() {
	candidates := make(map[string][]*Tool)
	for _, m := range g.modules {
		for _, t := range m.tools {
			key := foldName(t.Descriptor.Name)
			candidates[key] = append(candidates[key], t)
		}
	}
	tools := make(map[string]*Tool, len(candidates))
	var refused []Refusal
	for _, key := range slices.Sorted(maps.Keys(candidates)) {
		cands := candidates[key]
		if len(cands) == 1 {
			tools[cands[0].Descriptor.Name] = cands[0]
			continue
		}
		slices.SortFunc(cands, func(a, b *Tool) int { return strings.Compare(a.module.name, b.module.name) })
		var pinned []*Tool
		modules := make([]string, len(cands))
		for i, t := range cands {
			modules[i] = t.module.name
			if t.module.Pinned() {
				pinned = append(pinned, t)
			}
		}
		var winner *Tool
		if len(pinned) == 1 {
			winner = pinned[0]
			tools[winner.Descriptor.Name] = winner
		}
		for _, t := range cands {
			if t == winner {
				continue
			}
			r := Refusal{Tool: t.Descriptor.Name, Module: t.module.name, Modules: modules, Reason: refusalReason(t, cands, winner, len(pinned))}
			if winner != nil {
				r.ServedBy = winner.module.name
			}
			refused = append(refused, r)
		}
	}
	g.tools, g.refused = tools, refused
}

// refusalReason explains why t is refused and what to do about it.
func refusalReason(t *Tool, cands []*Tool, winner *Tool, pinned int) string {
	var spelled, modules []string
	sameSpelling := true
	for _, c := range cands {
		spelled = append(spelled, fmt.Sprintf("%q by module %s", c.Descriptor.Name, c.module.name))
		modules = append(modules, c.module.name)
		sameSpelling = sameSpelling && c.Descriptor.Name == t.Descriptor.Name
	}
	described := "also described by module"
	if len(modules) > 2 {
		described += "s"
	}
	described += " " + strings.Join(slices.DeleteFunc(modules, func(m string) bool { return m == t.module.name }), ", ")
	if !sameSpelling {
		described = "described as " + strings.Join(spelled, ", ") + " (tool names are unique ignoring case)"
	}
	head := fmt.Sprintf("tool %q of module %s is refused: it is %s", t.Descriptor.Name, t.module.name, described)
	switch {
	case winner != nil:
		return fmt.Sprintf("%s; only module %s is pinned (tools.pins.%s), so it serves the name; "+
			"remove %s.wasm from the tools dir or rename its tool", head, winner.module.name, configkey.Fold(winner.module.name), t.module.name)
	case pinned == 0:
		return head + "; none of them is pinned, so none serves the name; " +
			"pin the one you reviewed (warden install it), or remove or rename the others"
	default:
		return head + fmt.Sprintf("; %d of them are pinned, so none serves the name; "+
			"keep one: remove the other modules' files and their tools.pins entries, or rename their tools", pinned)
	}
}

// involving returns the refusals whose candidates include module. Callers
// hold mu.
func (g *Registry) involving(module string) []Refusal {
	var out []Refusal
	for _, r := range g.refused {
		if slices.Contains(r.Modules, module) {
			out = append(out, r)
		}
	}
	return out
}

// Tool returns the tool served under name (exactly as the tool spells it).
func (g *Registry) Tool(name string) (*Tool, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	t, ok := g.tools[name]
	return t, ok
}

// Candidates lists every loaded tool whose name equals name ignoring case,
// served or refused, sorted by module.
func (g *Registry) Candidates(name string) []*Tool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*Tool
	for _, m := range g.modules {
		for _, t := range m.tools {
			if foldName(t.Descriptor.Name) == foldName(name) {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.module.name, b.module.name) })
	return out
}

// Refused lists the tools refused for name collisions, sorted by name and
// module.
func (g *Registry) Refused() []Refusal {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Clone(g.refused)
}

// RefusedAs lists the refusals of tools named name, ignoring case.
func (g *Registry) RefusedAs(name string) []Refusal {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []Refusal
	for _, r := range g.refused {
		if foldName(r.Tool) == foldName(name) {
			out = append(out, r)
		}
	}
	return out
}

// Tools lists every tool served, sorted by name.
func (g *Registry) Tools() []*Tool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	tools := make([]*Tool, 0, len(g.tools))
	for _, t := range g.tools {
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Descriptor.Name < tools[j].Descriptor.Name })
	return tools
}

// Modules lists every module, sorted by name.
func (g *Registry) Modules() []*Module {
	g.mu.RLock()
	defer g.mu.RUnlock()
	mods := make([]*Module, 0, len(g.modules))
	for _, m := range g.modules {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b *Module) int { return strings.Compare(a.name, b.name) })
	return mods
}

// EndSession discards the instances kept for a client session.
func (g *Registry) EndSession(ctx context.Context, session string) {
	for _, m := range g.Modules() {
		m.EndSession(ctx, session)
	}
}

// Close closes every module.
func (g *Registry) Close(ctx context.Context) {
	for _, m := range g.Modules() {
		m.Close(ctx)
	}
}

// ModuleFiles lists the .wasm files directly in dir, sorted.
func ModuleFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tools dir: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wasm") {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}
