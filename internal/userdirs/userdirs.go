// Package userdirs resolves the current user's home, configuration and cache
// directories the way each operating system places them, and refuses with an
// error naming every source it tried rather than guess.
//
// The standard library's os.UserHomeDir reads only $HOME (%USERPROFILE% on
// Windows): a service an init system starts, or one run under `env -i`, has
// no $HOME, yet its user has a home in the user database. warden's deny
// rules ("~/.ssh") need that home, and without it they would either refuse
// to start or, worse, silently match nothing. So the home comes from the
// environment, else from the user database (os/user; with cgo off Go reads
// /etc/passwd on Unix), and only when both fail is it an error.
//
// The configuration and cache directories follow the same conventions as
// os.UserConfigDir and os.UserCacheDir (XDG on Linux and the BSDs, Library on
// macOS, %AppData% and %LocalAppData% on Windows), with the home above as the
// fallback when the variables are missing. A directory that would resolve to
// the file system root, or to a relative path, is refused: writing a cache to
// "/.cache" or to the current directory would be a surprise nobody asked for.
//
// Every rule is a pure function of a Lookup (the GOOS, an environment and a
// user database), so that the Linux tests cover the macOS and Windows
// answers; Home, ConfigDir and CacheDir apply them to the running process.
package userdirs

import (
	"fmt"
	"os"
	"os/user"
	"path"
	"runtime"
	"strings"
)

// Lookup is what the rules read: an OS and where to look on it.
type Lookup struct {
	// GOOS selects the conventions, as runtime.GOOS names them.
	GOOS string
	// Getenv reads an environment variable, as os.LookupEnv does.
	Getenv func(key string) (string, bool)
	// UserDBHome returns the current user's home from the user database.
	UserDBHome func() (string, error)
}

// Current is the Lookup of the running process: its OS, its environment and
// os/user's view of the user database.
func Current() Lookup {
	return Lookup{GOOS: runtime.GOOS, Getenv: os.LookupEnv, UserDBHome: userDBHome}
}

// Home returns the current user's home directory (see Lookup.Home).
func Home() (string, error) { return Current().Home() }

// ConfigDir returns the current user's configuration directory (see
// Lookup.ConfigDir).
func ConfigDir() (string, error) { return Current().ConfigDir() }

// CacheDir returns the current user's cache directory (see Lookup.CacheDir).
func CacheDir() (string, error) { return Current().CacheDir() }

// StateDir returns the current user's state directory (see Lookup.StateDir).
func StateDir() (string, error) { return Current().StateDir() }

func userDBHome() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	if u.HomeDir == "" {
		return "", fmt.Errorf("user %s (uid %s) has no home directory", u.Username, u.Uid)
	}
	return u.HomeDir, nil
}

// homeVar is the variable that holds the home directory on goos.
func homeVar(goos string) string {
	switch goos {
	case "windows":
		return "USERPROFILE"
	case "plan9":
		return "home"
	}
	return "HOME"
}

// Home returns the home directory: the environment's (homeVar), when it is
// set to an absolute path, else the user database's. The error names both
// sources when neither gives an absolute path.
func (l Lookup) Home() (string, error) {
	name := homeVar(l.GOOS)
	v, ok := l.Getenv(name)
	if ok && v != "" && isAbs(l.GOOS, v) {
		return v, nil
	}
	envWhy := fmt.Sprintf("%s is not set", l.varName(name))
	switch {
	case ok && v != "":
		envWhy = fmt.Sprintf("%s is a relative path (%q)", l.varName(name), v)
	case ok:
		envWhy = fmt.Sprintf("%s is empty", l.varName(name))
	}
	h, err := l.UserDBHome()
	if err == nil && !isAbs(l.GOOS, h) {
		err = fmt.Errorf("its home %q is not an absolute path", h)
	}
	if err != nil {
		return "", fmt.Errorf("home directory: %s, and the user database gave none: %w", envWhy, err)
	}
	return h, nil
}

// ConfigDir returns the directory of per-user configuration:
//
//   - Windows: %AppData%, else <home>\AppData\Roaming;
//   - macOS and iOS: <home>/Library/Application Support;
//   - Plan 9: <home>/lib;
//   - elsewhere: $XDG_CONFIG_HOME when it is an absolute path (the XDG
//     specification says to ignore a relative one), else <home>/.config.
func (l Lookup) ConfigDir() (string, error) {
	switch l.GOOS {
	case "windows":
		return l.underVarOrHome("configuration directory", "AppData", "AppData", "Roaming")
	case "darwin", "ios":
		return l.underHome("configuration directory", "Library", "Application Support")
	case "plan9":
		return l.underHome("configuration directory", "lib")
	}
	return l.underVarOrHome("configuration directory", "XDG_CONFIG_HOME", ".config")
}

// CacheDir returns the directory of per-user caches:
//
//   - Windows: %LocalAppData%, else <home>\AppData\Local;
//   - macOS and iOS: <home>/Library/Caches;
//   - Plan 9: <home>/lib/cache;
//   - elsewhere: $XDG_CACHE_HOME when it is an absolute path, else
//     <home>/.cache.
func (l Lookup) CacheDir() (string, error) {
	switch l.GOOS {
	case "windows":
		return l.underVarOrHome("cache directory", "LocalAppData", "AppData", "Local")
	case "darwin", "ios":
		return l.underHome("cache directory", "Library", "Caches")
	case "plan9":
		return l.underHome("cache directory", "lib", "cache")
	}
	return l.underVarOrHome("cache directory", "XDG_CACHE_HOME", ".cache")
}

// StateDir returns the directory of per-user state, data a program keeps
// between runs that is neither configuration nor a cache:
//
//   - Windows: %LocalAppData%, else <home>\AppData\Local;
//   - macOS and iOS: <home>/Library/Application Support;
//   - Plan 9: <home>/lib;
//   - elsewhere: $XDG_STATE_HOME when it is an absolute path, else
//     <home>/.local/state.
func (l Lookup) StateDir() (string, error) {
	switch l.GOOS {
	case "windows":
		return l.underVarOrHome("state directory", "LocalAppData", "AppData", "Local")
	case "darwin", "ios":
		return l.underHome("state directory", "Library", "Application Support")
	case "plan9":
		return l.underHome("state directory", "lib")
	}
	return l.underVarOrHome("state directory", "XDG_STATE_HOME", ".local", "state")
}

// underVarOrHome returns the variable name's value when it is an absolute
// path, else home joined with elem.
func (l Lookup) underVarOrHome(what, name string, elem ...string) (string, error) {
	if v, ok := l.Getenv(name); ok && v != "" && isAbs(l.GOOS, v) {
		if isRoot(l.GOOS, v) {
			return "", fmt.Errorf("%s: %s is the file system root (%q)", what, l.varName(name), v)
		}
		return v, nil
	}
	dir, err := l.underHome(what, elem...)
	if err != nil {
		return "", fmt.Errorf("%w (and %s is not set to an absolute path)", err, l.varName(name))
	}
	return dir, nil
}

// underHome returns home joined with elem, refusing a home that is the file
// system root: a system account's home often is "/", and its caches do not
// belong in "/.cache".
func (l Lookup) underHome(what string, elem ...string) (string, error) {
	home, err := l.Home()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if isRoot(l.GOOS, home) {
		return "", fmt.Errorf("%s: the home directory is the file system root (%q)", what, home)
	}
	return join(l.GOOS, home, elem...), nil
}

// varName spells an environment variable as goos's shell does.
func (l Lookup) varName(name string) string {
	if l.GOOS == "windows" {
		return "%" + name + "%"
	}
	return "$" + name
}

// isAbs reports whether p is absolute by goos's rules: on Windows a drive
// letter and a separator (C:\) or a UNC path (\\server\share); elsewhere a
// leading slash.
func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	if len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && isSep(p[2]) {
		return true
	}
	return len(p) > 2 && isSep(p[0]) && isSep(p[1]) && !isSep(p[2])
}

// isRoot reports whether p names the root of its file system (/, C:\, or a
// UNC share's root).
func isRoot(goos, p string) bool {
	if goos != "windows" {
		return path.Clean(p) == "/"
	}
	p = strings.TrimRight(p, `\/`)
	if len(p) == 2 && isLetter(p[0]) && p[1] == ':' {
		return true
	}
	// \\server\share
	if rest, ok := strings.CutPrefix(p, `\\`); ok {
		return len(strings.FieldsFunc(rest, func(r rune) bool { return r == '\\' || r == '/' })) <= 2
	}
	return false
}

// join joins base and elem with goos's separator. On Unix it is path.Join
// (filepath.Join there); on Windows the elements are warden's own constants,
// so joining them with a backslash after base is all filepath.Join would do.
func join(goos, base string, elem ...string) string {
	if goos != "windows" {
		return path.Join(append([]string{base}, elem...)...)
	}
	return strings.TrimRight(base, `\/`) + `\` + strings.Join(elem, `\`)
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isSep(c byte) bool    { return c == '\\' || c == '/' }
