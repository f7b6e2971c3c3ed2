package app

import (
	"strings"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// A tool's result and a prompt's messages may embed a resource (content of
// type "resource": a URI with its text or blob). The client shows it as
// that resource's content, so a module could put words into another
// module's resource, or into the project memory (memory://), that its
// owner never wrote: posing as another owner. An embedded resource may name
// a URI of the module's own, or one no other owner serves (file:// of a
// file it read, say); a URI another module or warden serves is bad_output.
// The runtime checks a resource read's contents against the module's own
// resources (runtime.Module.ReadResource); this is the same rule for the
// contents a tool or prompt embeds, where the other owners are known.

// foreignEmbedded returns the bad_output error of the first content block
// of blocks that embeds a resource another owner than m serves, or nil.
// what names the blocks in the message ("content", "messages").
func (a *App) foreignEmbedded(m *runtime.Module, what string, blocks func(yield func(int, *tool.Content) bool)) *tool.Error {
	for i, c := range blocks {
		if c.Type != tool.ContentResource || c.Resource == nil {
			continue
		}
		if owner := a.otherOwner(m, c.Resource.URI); owner != "" {
			return tool.Errorf(tool.KindBadOutput,
				"%s[%d]: embeds resource %q, which %s serves, not module %s; a module embeds only its own resources or URIs no one else serves",
				what, i, c.Resource.URI, owner, m.Name())
		}
	}
	return nil
}

// otherOwner names the owner other than m that serves uri ("module x",
// "warden's project memory"), or "" when none does.
func (a *App) otherOwner(m *runtime.Module, uri string) string {
	if scheme, _, ok := strings.Cut(uri, ":"); ok && strings.EqualFold(scheme, "memory") {
		// memory:// is warden's, served or not, declared by the module or
		// not: a module never speaks for it.
		return "warden's project memory (memory://)"
	}
	if _, ok := m.ResourceOwner(uri); ok {
		return ""
	}
	for _, other := range a.catalog.Table().Modules() {
		if other.Name() == m.Name() {
			continue
		}
		if _, ok := other.ResourceOwner(uri); ok {
			return "module " + other.Name()
		}
	}
	return ""
}

// resultBlocks iterates a tool result's content.
func resultBlocks(res *tool.Result) func(yield func(int, *tool.Content) bool) {
	return func(yield func(int, *tool.Content) bool) {
		for i := range res.Content {
			if !yield(i, &res.Content[i]) {
				return
			}
		}
	}
}

// promptBlocks iterates a prompt's messages' content.
func promptBlocks(res *tool.PromptResult) func(yield func(int, *tool.Content) bool) {
	return func(yield func(int, *tool.Content) bool) {
		for i := range res.Messages {
			if !yield(i, &res.Messages[i].Content) {
				return
			}
		}
	}
}
