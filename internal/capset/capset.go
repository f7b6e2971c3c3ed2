// Package capset decides whether one set of capabilities covers another:
// whether a grant allows everything a request asks for, and what is left
// over when it does not. Grants, permission prompts, install review and
// update diffs all ask this one question, so they cannot disagree about
// what counts as "more".
//
// Each dimension defers to the capability that enforces it (fs.Covers,
// net.Covers, memory.TopicCovers), so that covering follows what a grant
// lets a tool do at run time. Where only config could tell, the answer is
// "not covered": a review then shows a gap, an update counts growth, a
// prompt is not offered.
//
// The package lives outside package tool because tool is the guests' wire
// contract and this logic is the host's.
package capset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/warden-run/warden/hostfuncs/env"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/hostfuncs/net"
	"github.com/warden-run/warden/tool"
)

// Covers reports whether granted allows everything requested asks for, in
// every dimension: fs read and write paths, net hosts, env keys, LSP
// languages, the memory level and its topics, and client features.
func Covers(granted, requested tool.Capabilities) bool {
	return Missing(requested, granted).IsZero()
}

// Missing returns what requested asks for that granted does not cover: the
// growth of an update, the gaps an install review shows. It is zero exactly
// when granted covers requested.
//
// Memory is one request of a level over some topics, no topics meaning the
// whole store. When the level is not covered, Missing holds the requested
// level and topics; when the level is but the topics are not, Missing
// holds only the topics not covered, or, when requested asks for the whole
// store and granted is limited to topics, the requested level and no
// topics: "this level over every topic".
func Missing(requested, granted tool.Capabilities) tool.Capabilities {
	var m tool.Capabilities
	m.FS.Read = notCovered(requested.FS.Read, granted.FS.Read, fs.Covers)
	m.FS.Write = notCovered(requested.FS.Write, granted.FS.Write, fs.Covers)
	m.Memory, m.MemoryTopics = missingMemory(requested, granted)
	m.LSP = notCovered(requested.LSP, granted.LSP, strings.EqualFold)
	m.Net = notCovered(requested.Net, granted.Net, net.Covers)
	m.Env = notCovered(requested.Env, granted.Env, env.Covers)
	m.Client = notCovered(requested.Client, granted.Client, strings.EqualFold)
	return m
}

func missingMemory(requested, granted tool.Capabilities) (tool.MemoryAccess, []string) {
	if requested.Memory == tool.MemoryNone {
		return tool.MemoryNone, nil // topics without a level request nothing
	}
	if !levelCovers(granted.Memory, requested.Memory) {
		return requested.Memory, slices.Clone(requested.MemoryTopics)
	}
	switch {
	case len(granted.MemoryTopics) == 0:
		return tool.MemoryNone, nil // the whole store covers any topic
	case len(requested.MemoryTopics) == 0:
		return requested.Memory, nil // the whole store, where granted has topics
	}
	return tool.MemoryNone, notCovered(requested.MemoryTopics, granted.MemoryTopics, memory.TopicCovers)
}

// levelCovers orders memory access: none < read < read-write. An unknown
// level (which config and descriptor validation refuse) grants nothing, as
// at run time, and as a request is covered only by the same string.
func levelCovers(granted, requested tool.MemoryAccess) bool {
	g, gok := rank(granted)
	r, rok := rank(requested)
	return granted == requested || gok && rok && g >= r
}

func rank(m tool.MemoryAccess) (int, bool) {
	switch m {
	case tool.MemoryNone:
		return 0, true
	case tool.MemoryRead:
		return 1, true
	case tool.MemoryReadWrite:
		return 2, true
	}
	return 0, false
}

func notCovered(requested, granted []string, covers func(grant, request string) bool) []string {
	var out []string
	for _, r := range requested {
		if !slices.ContainsFunc(granted, func(g string) bool { return covers(g, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// Need returns the capabilities that answering need with a grant adds, as
// `warden grant` and a permission prompt's "allow always" write it: a
// memory level alone (config's memory key) is that level over the whole
// store unless the grant already names topics, so it is the whole store
// here; a memory topic is that topic at read level, the least a topic
// grant is used with. ok is false for a key no grant has.
func Need(need tool.Need) (c tool.Capabilities, ok bool) {
	v := []string{need.Value}
	switch need.Key {
	case "fs.read":
		c.FS.Read = v
	case "fs.write":
		c.FS.Write = v
	case "net":
		c.Net = v
	case "env":
		c.Env = v
	case "lsp":
		c.LSP = v
	case "client":
		c.Client = v
	case "memory":
		c.Memory = tool.MemoryAccess(need.Value)
	case "memory.topics":
		c.Memory, c.MemoryTopics = tool.MemoryRead, v
	default:
		return c, false
	}
	return c, true
}

// CoversNeed reports whether c (a tool's requested capabilities) covers
// need, a grant a denial says would have allowed the request: whether a
// permission prompt may offer it as something the tool asked for.
func CoversNeed(c tool.Capabilities, need tool.Need) bool {
	n, ok := Need(need)
	return ok && Covers(c, n)
}

// Describe lists each request in m (a result of Missing), one entry per
// host, path, key, language or feature, in the KEY=VALUE form `warden
// grant` takes, with what the form alone would not say: e.g.
// "net=example.com", "net=https://127.0.0.1 (an internal host, which "*"
// never covers)" or "memory=read-write over every topic (the whole store)".
// The strings hold the module's own text: escape them before printing.
func Describe(m tool.Capabilities) []string {
	var out []string
	add := func(key string, values []string) {
		for _, v := range values {
			out = append(out, key+"="+v)
		}
	}
	add("fs.read", m.FS.Read)
	add("fs.write", m.FS.Write)
	switch {
	case m.Memory != tool.MemoryNone && len(m.MemoryTopics) == 0:
		out = append(out, fmt.Sprintf("memory=%s over every topic (the whole store)", m.Memory))
	case m.Memory != tool.MemoryNone:
		out = append(out, fmt.Sprintf("memory=%s over topics %s", m.Memory, strings.Join(m.MemoryTopics, ",")))
	default:
		add("memory.topics", m.MemoryTopics)
	}
	add("lsp", m.LSP)
	for _, v := range m.Net {
		if net.Internal(v) {
			v += ` (an internal host, which "*" never covers)`
		}
		out = append(out, "net="+v)
	}
	add("env", m.Env)
	add("client", m.Client)
	return out
}
