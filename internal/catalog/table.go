package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/runtime"
)

// Table is the set of loaded modules and the tools they serve, looked up
// by name: the collision and pin policy.
//
// The tool table is a pure function of the set of loaded modules and which
// of them are pinned; the order they were loaded in plays no part. Tool
// names are unique ignoring case. When several modules describe the same
// name (ignoring case), the one pinned module among them serves it and the
// others' tools are refused; when none or several are pinned, all of them
// are refused. A refused tool is not served, and Refused says why. So a
// module dropped into the tools dir later can never displace a pinned tool,
// and removing one side of a collision brings the other back.
type Table struct {
	mu      sync.RWMutex
	modules map[string]*runtime.Module // by module name
	pinned  map[string]bool            // module names whose bytes matched their pin when put
	tools   map[string]*runtime.Tool   // the tools served, by name
	refused []Refusal                  // sorted by folded tool name, then module
}

// Refusal is a tool the table does not serve because another module
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

// NewTable returns an empty Table.
func NewTable() *Table {
	return &Table{modules: make(map[string]*runtime.Module), pinned: make(map[string]bool), tools: make(map[string]*runtime.Tool)}
}

// Put adds m, replacing a loaded module of the same name (hot reload);
// pinned says whether m's bytes matched an approved pin. It returns the
// refusals that involve m after the change (m's tools refused, or tools of
// other modules refused because m describes the same name). The replaced
// module, if any, is returned so the caller can close it once its calls
// have finished.
func (tab *Table) Put(m *runtime.Module, pinned bool) (replaced *runtime.Module, refused []Refusal) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	replaced = tab.modules[m.Name()]
	tab.modules[m.Name()] = m
	tab.pinned[m.Name()] = pinned
	tab.rebuild()
	return replaced, tab.involving(m.Name())
}

// Pinned reports whether m is in the table and was pinned (its sha256
// verified against an approved pin) when the table last heard of it.
// The pinned state is the table's, not the module's: only the table
// changes it, under its lock, so that the tool table always agrees with it.
func (tab *Table) Pinned(m *runtime.Module) bool {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	return tab.modules[m.Name()] == m && tab.pinned[m.Name()]
}

// SetPinned records whether the loaded module named name is pinned (after a
// config change added, removed or changed its pin) and reports whether that
// changed anything.
func (tab *Table) SetPinned(name string, pinned bool) bool {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.modules[name] == nil || tab.pinned[name] == pinned {
		return false
	}
	tab.pinned[name] = pinned
	tab.rebuild()
	return true
}

// Remove drops the module named name and returns it (nil if absent). Tools
// it was refused against are served again if nothing else stands in their
// way.
func (tab *Table) Remove(name string) *runtime.Module {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	m := tab.modules[name]
	if m == nil {
		return nil
	}
	tab.drop(name)
	return m
}

// RemoveIf drops the module named name only if it is m (not a version that
// replaced it since), and reports whether it did.
func (tab *Table) RemoveIf(name string, m *runtime.Module) bool {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.modules[name] != m {
		return false
	}
	tab.drop(name)
	return true
}

// drop removes the module named name and rebuilds. Callers hold mu.
func (tab *Table) drop(name string) {
	delete(tab.modules, name)
	delete(tab.pinned, name)
	tab.rebuild()
}

// foldName is the key tool names are unique under.
func foldName(name string) string { return configkey.Fold(name) }

// byModule orders tools by the name of their module.
func byModule(a, b *runtime.Tool) int { return strings.Compare(a.Module().Name(), b.Module().Name()) }

// rebuild computes the tool table from the modules alone. Callers hold mu.
func (tab *Table) rebuild() {
	candidates := make(map[string][]*runtime.Tool)
	for _, m := range tab.modules {
		for _, t := range m.Tools() {
			key := foldName(t.Descriptor.Name)
			candidates[key] = append(candidates[key], t)
		}
	}
	tools := make(map[string]*runtime.Tool, len(candidates))
	var refused []Refusal
	for _, key := range slices.Sorted(maps.Keys(candidates)) {
		cands := candidates[key]
		if len(cands) == 1 {
			tools[cands[0].Descriptor.Name] = cands[0]
			continue
		}
		slices.SortFunc(cands, byModule)
		var pinned []*runtime.Tool
		modules := make([]string, len(cands))
		for i, t := range cands {
			modules[i] = t.Module().Name()
			if tab.pinned[t.Module().Name()] {
				pinned = append(pinned, t)
			}
		}
		var winner *runtime.Tool
		if len(pinned) == 1 {
			winner = pinned[0]
			tools[winner.Descriptor.Name] = winner
		}
		for _, t := range cands {
			if t == winner {
				continue
			}
			r := Refusal{Tool: t.Descriptor.Name, Module: t.Module().Name(), Modules: modules, Reason: refusalReason(t, cands, winner, len(pinned))}
			if winner != nil {
				r.ServedBy = winner.Module().Name()
			}
			refused = append(refused, r)
		}
	}
	tab.tools, tab.refused = tools, refused
}

// refusalReason explains why t is refused and what to do about it.
func refusalReason(t *runtime.Tool, cands []*runtime.Tool, winner *runtime.Tool, pinned int) string {
	var spelled, modules []string
	sameSpelling := true
	for _, c := range cands {
		spelled = append(spelled, fmt.Sprintf("%q by module %s", c.Descriptor.Name, c.Module().Name()))
		modules = append(modules, c.Module().Name())
		sameSpelling = sameSpelling && c.Descriptor.Name == t.Descriptor.Name
	}
	described := "also described by module"
	if len(modules) > 2 {
		described += "s"
	}
	described += " " + strings.Join(slices.DeleteFunc(modules, func(m string) bool { return m == t.Module().Name() }), ", ")
	if !sameSpelling {
		described = "described as " + strings.Join(spelled, ", ") + " (tool names are unique ignoring case)"
	}
	head := fmt.Sprintf("tool %q of module %s is refused: it is %s", t.Descriptor.Name, t.Module().Name(), described)
	switch {
	case winner != nil:
		return fmt.Sprintf("%s; only module %s is pinned (tools.pins.%s), so it serves the name; "+
			"remove %s.wasm from the tools dir or rename its tool", head, winner.Module().Name(), configkey.Fold(winner.Module().Name()), t.Module().Name())
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
func (tab *Table) involving(module string) []Refusal {
	var out []Refusal
	for _, r := range tab.refused {
		if slices.Contains(r.Modules, module) {
			out = append(out, r)
		}
	}
	return out
}

// Tool returns the tool served under name (exactly as the tool spells it).
func (tab *Table) Tool(name string) (*runtime.Tool, bool) {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	t, ok := tab.tools[name]
	return t, ok
}

// Candidates lists every loaded tool whose name equals name ignoring case,
// served or refused, sorted by module.
func (tab *Table) Candidates(name string) []*runtime.Tool {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	var out []*runtime.Tool
	for _, m := range tab.modules {
		for _, t := range m.Tools() {
			if foldName(t.Descriptor.Name) == foldName(name) {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, byModule)
	return out
}

// Refused lists the tools refused for name collisions, sorted by name and
// module.
func (tab *Table) Refused() []Refusal {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	return slices.Clone(tab.refused)
}

// RefusedAs lists the refusals of tools named name, ignoring case.
func (tab *Table) RefusedAs(name string) []Refusal {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	var out []Refusal
	for _, r := range tab.refused {
		if foldName(r.Tool) == foldName(name) {
			out = append(out, r)
		}
	}
	return out
}

// Tools lists every tool served, sorted by name.
func (tab *Table) Tools() []*runtime.Tool {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	tools := make([]*runtime.Tool, 0, len(tab.tools))
	for _, t := range tab.tools {
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Descriptor.Name < tools[j].Descriptor.Name })
	return tools
}

// Modules lists every module, sorted by name.
func (tab *Table) Modules() []*runtime.Module {
	tab.mu.RLock()
	defer tab.mu.RUnlock()
	mods := make([]*runtime.Module, 0, len(tab.modules))
	for _, m := range tab.modules {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b *runtime.Module) int { return strings.Compare(a.Name(), b.Name()) })
	return mods
}

// EndSession discards the instances kept for a client session.
func (tab *Table) EndSession(ctx context.Context, session string) {
	for _, m := range tab.Modules() {
		m.EndSession(ctx, session)
	}
}

// Close closes every module.
func (tab *Table) Close(ctx context.Context) {
	for _, m := range tab.Modules() {
		m.Close(ctx)
	}
}
