package scaffold

import (
	"errors"
	"fmt"
	"strings"
)

// OS is what the per-OS rules of an MCP client's setup need: GOOS, so the
// rules of every OS are plain functions of strings and are tested on any
// other, and the user's home and config folders as that OS names them
// (os.UserHomeDir and os.UserConfigDir there; empty when unknown, and then
// the placeholder the OS's own docs use stands in: ~, %APPDATA%…).
type OS struct {
	GOOS      string
	Home      string
	ConfigDir string
}

// ClientFile is a file an MCP client reads the servers it starts from.
type ClientFile struct {
	// Client says which client, and for a project file, that it is one.
	Client string
	// Path is in the OS's form: absolute for a user-wide file, relative
	// to the project's folder for a project file.
	Path string
}

// windows reports whether paths on o use Windows's rules.
func (o OS) windows() bool { return o.GOOS == "windows" }

// join joins path elements with the OS's separator: filepath.Join would
// use the separator of the OS running the test, not of the one described.
func (o OS) join(elem ...string) string {
	sep := "/"
	if o.windows() {
		sep = `\`
	}
	return strings.Join(elem, sep)
}

func (o OS) home() string {
	switch {
	case o.Home != "":
		return strings.TrimRight(o.Home, `/\`)
	case o.windows():
		return "%USERPROFILE%"
	}
	return "~"
}

// configDir is os.UserConfigDir's answer on o: %APPDATA% on Windows,
// ~/Library/Application Support on macOS, $XDG_CONFIG_HOME or ~/.config
// elsewhere, where Claude Desktop and VS Code keep their user files.
func (o OS) configDir() string {
	switch {
	case o.ConfigDir != "":
		return strings.TrimRight(o.ConfigDir, `/\`)
	case o.windows():
		return "%APPDATA%"
	case o.GOOS == "darwin":
		return "~/Library/Application Support"
	}
	return "~/.config"
}

// ClientFiles are the files client reads its MCP servers from on o, the
// user-wide one first: where the snippet MCPConfig prints is merged.
// Claude Desktop ships for macOS and Windows only; on other systems the
// Claude file is Claude Code's project file.
func ClientFiles(client string, o OS) ([]ClientFile, error) {
	switch client {
	case "claude":
		var files []ClientFile
		if o.GOOS == "darwin" || o.windows() {
			files = append(files, ClientFile{"Claude Desktop", o.join(o.configDir(), "Claude", "claude_desktop_config.json")})
		}
		return append(files, ClientFile{"Claude Code, in a project", ".mcp.json"}), nil
	case "vscode":
		return []ClientFile{
			{"VS Code, for every workspace", o.join(o.configDir(), "Code", "User", "mcp.json")},
			{"VS Code, in a workspace", o.join(".vscode", "mcp.json")},
		}, nil
	case "cursor":
		return []ClientFile{
			{"Cursor, for every project", o.join(o.home(), ".cursor", "mcp.json")},
			{"Cursor, in a project", o.join(".cursor", "mcp.json")},
		}, nil
	}
	return nil, fmt.Errorf("unknown client %q: want one of %s", client, strings.Join(MCPClients, ", "))
}

// ErrNotAbsolute is NativePath's error for a path a client could not
// resolve: it starts servers from a folder of its own.
var ErrNotAbsolute = errors.New("not an absolute path")

// NativePath is p as an MCP client on o must be given it: absolute, with
// the OS's separator. On Windows that is a drive path (C:\…) or a UNC path
// (\\server\share\…, \\?\…); forward slashes become backslashes, which
// Windows accepts as well but its clients' docs and users do not expect.
// A drive-relative path (C:foo, \foo) names a different file depending on
// the client's current drive and folder, so it is refused like a relative
// one. JSON's escaping (\\) then quotes the separators in the snippet.
func NativePath(o OS, p string) (string, error) {
	if !o.windows() {
		if !strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("%q: %w", p, ErrNotAbsolute)
		}
		return p, nil
	}
	p = strings.ReplaceAll(p, "/", `\`)
	switch {
	case strings.HasPrefix(p, `\\`) && len(p) > 2 && p[2] != '\\':
		return p, nil // UNC, \\?\ and \\.\
	case len(p) >= 3 && isDriveLetter(p[0]) && p[1] == ':' && p[2] == '\\':
		return p, nil
	}
	return "", fmt.Errorf("%q: %w", p, ErrNotAbsolute)
}

func isDriveLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
