package lsp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/warden-run/warden/tool"
)

// probeTimeout bounds running a server's Probe: a proxy answers at once.
const probeTimeout = 10 * time.Second

// Installed returns nil when the server of language lang is installed: its
// command is found (in PATH unless it names a path) and, for a language
// with a Probe, runs. Otherwise it returns the error a query would get:
// unavailable, naming the language, the command and how to install it.
// A language that is not configured is not_found.
func (m *Manager) Installed(ctx context.Context, lang string) error {
	return m.cfg.installed(ctx, lang)
}

func (c *Config) installed(ctx context.Context, name string) error {
	l, ok := c.Languages[name]
	if !ok {
		return tool.Errorf(tool.KindNotFound, "no language server is configured for %q", name)
	}
	bin, err := exec.LookPath(l.Command)
	if err != nil {
		return errNotInstalled(name, l, fmt.Sprintf("%s is not in PATH", l.Command))
	}
	if len(l.Probe) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, l.Probe...)
	cmd.Env = append(os.Environ(), l.Env...)
	// Only the end of what the probe prints is kept: a probe that floods
	// its output for probeTimeout cannot grow warden's memory.
	out := &tailWriter{log: slog.New(slog.DiscardHandler)}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		why := probeReason(out.tail())
		if why == "" {
			why = err.Error()
		}
		return errNotInstalled(name, l, fmt.Sprintf("%s %s fails: %s", l.Command, strings.Join(l.Probe, " "), why))
	}
	return nil
}

// errNotInstalled is the answer to a query whose server is missing.
func errNotInstalled(name string, l Language, why string) error {
	msg := fmt.Sprintf("the %s language server is not installed (%s)", name, why)
	if l.Install != "" {
		msg += "; install it with: " + l.Install
	} else {
		msg += fmt.Sprintf("; install it, or set lsp.languages.%s.command", name)
	}
	return tool.Errorf(tool.KindUnavailable, "%s", msg)
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// probeReason picks why a probe failed from its output: the first line
// that says "error" (rustup follows its own with a backtrace when
// RUST_BACKTRACE is set), else the last line.
func probeReason(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(strings.ToLower(l), "error") {
			return l
		}
	}
	return lastLine(out)
}
