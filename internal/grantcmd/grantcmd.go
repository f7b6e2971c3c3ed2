// Package grantcmd writes the `warden grant` command that gives a tool a
// set of capabilities. Install's review suggests one for what a tool
// requests and is not granted, and a call-time denial offers one beside the
// config key it names: both are built here, so the command a person is
// told to run is spelled one way, and grants exactly the capabilities it
// was built from, never more.
package grantcmd

import (
	"strings"

	"github.com/warden-run/warden/internal/capset"
	"github.com/warden-run/warden/tool"
)

// Command is `warden grant TOOL [--module MODULE] KEY=VALUE...` granting
// c to toolName. module, when not "", is written as --module: the module
// the grant must belong to; "" leaves the choice to `warden grant` (the
// module the entry names, else the one serving the tool, else the one
// named like it). Values are quoted for a POSIX shell; they
// are the tool's or module's text, so escape the result before printing
// it to a terminal. It returns "" when c is zero.
func Command(toolName, module string, c tool.Capabilities) string {
	args := Args(c)
	if len(args) == 0 {
		return ""
	}
	cmd := "warden grant " + quote(toolName)
	if module != "" {
		cmd += " --module " + quote(module)
	}
	return cmd + " " + strings.Join(args, " ")
}

// Args renders c as `warden grant` arguments, one KEY=VALUE[,VALUE] per
// grant key in config's order, quoted for a shell when needed. A memory
// level and its topics are two arguments (memory=read-write
// memory.topics=notes), so a topic-limited request is never suggested as
// the whole store.
func Args(c tool.Capabilities) []string {
	var args []string
	add := func(key string, values []string) {
		if len(values) > 0 {
			args = append(args, quote(key+"="+strings.Join(values, ",")))
		}
	}
	add("fs.read", c.FS.Read)
	add("fs.write", c.FS.Write)
	if c.Memory != tool.MemoryNone {
		add("memory", []string{string(c.Memory)})
	}
	add("memory.topics", c.MemoryTopics)
	add("lsp", c.LSP)
	add("net", c.Net)
	add("env", c.Env)
	add("client", c.Client)
	return args
}

// ForNeed is Command for the one grant a denial names (tool.Error.Need).
// It returns "" for a key no grant has.
func ForNeed(toolName, module string, need tool.Need) string {
	c, ok := capset.Need(need)
	if !ok {
		return ""
	}
	if need.Key == "memory.topics" {
		// A topic's denial offers the topic alone: the level the tool
		// already has stays as it is.
		c.Memory = tool.MemoryNone
	}
	return Command(toolName, module, c)
}

func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,=/:-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
