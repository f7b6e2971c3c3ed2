package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registry is the set of loaded tools, looked up by name. Tool names are
// unique across modules: a module whose tool collides with a loaded one
// keeps its other tools and has the colliding one rejected.
type Registry struct {
	mu      sync.RWMutex
	modules map[string]*Module // by module name
	tools   map[string]*Tool
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{modules: make(map[string]*Module), tools: make(map[string]*Tool)}
}

// Put adds m, replacing a loaded module of the same name (hot reload). It
// returns the tools of m refused because another module already provides
// their name; those are also appended to m.Rejected. The replaced module, if
// any, is returned so the caller can close it once its calls have finished.
func (g *Registry) Put(m *Module) (replaced *Module, collisions []Rejection) {
	g.mu.Lock()
	defer g.mu.Unlock()
	replaced = g.modules[m.name]
	if replaced != nil {
		for _, t := range replaced.tools {
			if g.tools[t.Descriptor.Name] == t {
				delete(g.tools, t.Descriptor.Name)
			}
		}
	}
	kept := m.tools[:0:0]
	for _, t := range m.tools {
		if other, taken := g.tools[t.Descriptor.Name]; taken {
			r := Rejection{Name: t.Descriptor.Name, Reason: fmt.Errorf("tool %q: name already provided by module %s",
				t.Descriptor.Name, other.module.name)}
			collisions = append(collisions, r)
			m.rejected = append(m.rejected, r)
			continue
		}
		g.tools[t.Descriptor.Name] = t
		kept = append(kept, t)
	}
	m.tools = kept
	g.modules[m.name] = m
	return replaced, collisions
}

// Remove drops the module named name and returns it (nil if absent).
func (g *Registry) Remove(name string) *Module {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.modules[name]
	if m == nil {
		return nil
	}
	for _, t := range m.tools {
		if g.tools[t.Descriptor.Name] == t {
			delete(g.tools, t.Descriptor.Name)
		}
	}
	delete(g.modules, name)
	return m
}

// Tool returns the tool named name.
func (g *Registry) Tool(name string) (*Tool, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	t, ok := g.tools[name]
	return t, ok
}

// Tools lists every tool, sorted by name.
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
		m.pool.endSession(ctx, session)
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
