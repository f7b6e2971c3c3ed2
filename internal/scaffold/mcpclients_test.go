package scaffold

import (
	"errors"
	"fmt"
	"testing"
)

// TestClientFiles: each client's files on each OS, in that OS's form,
// from the folders the OS names, and with the OS's placeholders when it
// names none; run on Linux for macOS and Windows too.
func TestClientFiles(t *testing.T) {
	darwin := OS{GOOS: "darwin", Home: "/Users/me", ConfigDir: "/Users/me/Library/Application Support"}
	windows := OS{GOOS: "windows", Home: `C:\Users\me`, ConfigDir: `C:\Users\me\AppData\Roaming`}
	linux := OS{GOOS: "linux", Home: "/home/me", ConfigDir: "/home/me/.config"}
	for _, c := range []struct {
		client string
		os     OS
		want   string
	}{
		{"claude", darwin, `[{Claude Desktop /Users/me/Library/Application Support/Claude/claude_desktop_config.json} {Claude Code, in a project .mcp.json}]`},
		{"claude", windows, `[{Claude Desktop C:\Users\me\AppData\Roaming\Claude\claude_desktop_config.json} {Claude Code, in a project .mcp.json}]`},
		{"claude", linux, `[{Claude Code, in a project .mcp.json}]`},
		{"vscode", darwin, `[{VS Code, for every workspace /Users/me/Library/Application Support/Code/User/mcp.json} {VS Code, in a workspace .vscode/mcp.json}]`},
		{"vscode", windows, `[{VS Code, for every workspace C:\Users\me\AppData\Roaming\Code\User\mcp.json} {VS Code, in a workspace .vscode\mcp.json}]`},
		{"vscode", linux, `[{VS Code, for every workspace /home/me/.config/Code/User/mcp.json} {VS Code, in a workspace .vscode/mcp.json}]`},
		{"cursor", darwin, `[{Cursor, for every project /Users/me/.cursor/mcp.json} {Cursor, in a project .cursor/mcp.json}]`},
		{"cursor", windows, `[{Cursor, for every project C:\Users\me\.cursor\mcp.json} {Cursor, in a project .cursor\mcp.json}]`},
		{"cursor", linux, `[{Cursor, for every project /home/me/.cursor/mcp.json} {Cursor, in a project .cursor/mcp.json}]`},
		// A trailing separator is not doubled.
		{"cursor", OS{GOOS: "windows", Home: `C:\Users\me\`}, `[{Cursor, for every project C:\Users\me\.cursor\mcp.json} {Cursor, in a project .cursor\mcp.json}]`},
		// Folders the OS could not name: its own placeholders.
		{"claude", OS{GOOS: "windows"}, `[{Claude Desktop %APPDATA%\Claude\claude_desktop_config.json} {Claude Code, in a project .mcp.json}]`},
		{"claude", OS{GOOS: "darwin"}, `[{Claude Desktop ~/Library/Application Support/Claude/claude_desktop_config.json} {Claude Code, in a project .mcp.json}]`},
		{"cursor", OS{GOOS: "windows"}, `[{Cursor, for every project %USERPROFILE%\.cursor\mcp.json} {Cursor, in a project .cursor\mcp.json}]`},
		{"vscode", OS{GOOS: "linux"}, `[{VS Code, for every workspace ~/.config/Code/User/mcp.json} {VS Code, in a workspace .vscode/mcp.json}]`},
	} {
		files, err := ClientFiles(c.client, c.os)
		if got := fmt.Sprint(files); err != nil || got != c.want {
			t.Errorf("%s on %+v: %s (%v)\nwant %s", c.client, c.os, got, err, c.want)
		}
	}
	if _, err := ClientFiles("emacs", linux); err == nil || err.Error() != `unknown client "emacs": want one of claude, vscode, cursor` {
		t.Errorf("emacs: %v", err)
	}
}

// TestNativePath: the binary's and the config's paths as a client on each
// OS must be given them: absolute, in the OS's separators; a relative or
// drive-relative path is refused with ErrNotAbsolute.
func TestNativePath(t *testing.T) {
	for _, c := range []struct {
		goos, in, want string
	}{
		{"linux", "/usr/local/bin/warden", "/usr/local/bin/warden"},
		{"darwin", "/Users/me/My Tools/config.yaml", "/Users/me/My Tools/config.yaml"},
		{"darwin", `/Users/me/odd\name`, `/Users/me/odd\name`}, // a backslash is a name's byte there
		{"windows", `C:\Program Files\warden\warden.exe`, `C:\Program Files\warden\warden.exe`},
		{"windows", "C:/Users/me/config.yaml", `C:\Users\me\config.yaml`},
		{"windows", `d:\tools\config.yaml`, `d:\tools\config.yaml`},
		{"windows", `\\server\share\warden\config.yaml`, `\\server\share\warden\config.yaml`},
		{"windows", `\\?\C:\very\long\config.yaml`, `\\?\C:\very\long\config.yaml`},
		{"windows", "//server/share/config.yaml", `\\server\share\config.yaml`},
	} {
		got, err := NativePath(OS{GOOS: c.goos}, c.in)
		if err != nil || got != c.want {
			t.Errorf("%s %q: %q (%v), want %q", c.goos, c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ goos, in string }{
		{"linux", "config.yaml"},
		{"darwin", "~/config.yaml"},
		{"linux", `C:\config.yaml`},
		{"windows", "config.yaml"},
		{"windows", `C:config.yaml`},
		{"windows", `\Users\me\config.yaml`},
		{"windows", "/Users/me/config.yaml"},
		{"windows", `\\\server\share`},
		{"windows", `\\`},
		{"windows", ""},
	} {
		got, err := NativePath(OS{GOOS: c.goos}, c.in)
		if !errors.Is(err, ErrNotAbsolute) {
			t.Errorf("%s %q: %q (%v), want ErrNotAbsolute", c.goos, c.in, got, err)
		}
	}
}

// TestMCPConfigWindowsPaths: a Windows snippet carries the paths with
// JSON's escaping of the backslash, and a space stays inside its argument.
func TestMCPConfigWindowsPaths(t *testing.T) {
	o := OS{GOOS: "windows"}
	exe, err := NativePath(o, `C:\Program Files\warden\warden.exe`)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := NativePath(o, `C:/Users/me/My Tools/config.yaml`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MCPConfig("claude", "warden", exe, cfg)
	want := `{
  "mcpServers": {
    "warden": {
      "command": "C:\\Program Files\\warden\\warden.exe",
      "args": [
        "serve",
        "--config",
        "C:\\Users\\me\\My Tools\\config.yaml"
      ]
    }
  }
}
`
	if err != nil || string(got) != want {
		t.Errorf("got %s (%v)\nwant %s", got, err, want)
	}
}

// FuzzNativePath: whatever the path, NativePath does not panic, and what
// it accepts for Windows is absolute there and has no forward slash.
func FuzzNativePath(f *testing.F) {
	for _, s := range []string{`C:\a`, "C:/a", `\\s\x`, `\\?\C:\`, "/a", "a", "", `\\`, "C:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := NativePath(OS{GOOS: "windows"}, p)
		if err != nil {
			return
		}
		for i := 0; i < len(got); i++ {
			if got[i] == '/' {
				t.Fatalf("%q became %q", p, got)
			}
		}
		again, err := NativePath(OS{GOOS: "windows"}, got)
		if err != nil || again != got {
			t.Fatalf("%q: not stable: %q (%v)", got, again, err)
		}
	})
}
