package userdirs

import (
	"path"
	"strings"
	"testing"
)

// FuzzLookup: whatever the environment and the user database hold, every
// answer on every OS is an absolute path that is not the file system root,
// or an error; a home is one of the two sources, as given.
func FuzzLookup(f *testing.F) {
	f.Add("/home/ann", "/xdg", "/home/db")
	f.Add("", "", "/")
	f.Add(`C:\Users\ann`, `\\srv\share\cache`, `C:`)
	f.Add("relative", "//", `\\srv\share`)
	f.Add(`C:/`, `c:\x\`, "")
	f.Fuzz(func(t *testing.T, home, xdg, db string) {
		for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
			env := map[string]string{}
			for _, k := range []string{"HOME", "USERPROFILE"} {
				env[k] = home
			}
			for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "AppData", "LocalAppData"} {
				env[k] = xdg
			}
			l := lookup(goos, env, db)
			if h, err := l.Home(); err == nil {
				if (h != home && h != db) || !isAbs(goos, h) {
					t.Fatalf("%s: home %q from %q and %q", goos, h, home, db)
				}
			}
			for _, dir := range []func() (string, error){l.ConfigDir, l.CacheDir, l.StateDir} {
				d, err := dir()
				if err != nil {
					continue
				}
				if !isAbs(goos, d) || isRoot(goos, d) {
					t.Fatalf("%s: dir %q from %q, %q, %q", goos, d, home, xdg, db)
				}
				if !under(d, home) && !under(d, db) && d != xdg {
					t.Fatalf("%s: dir %q is from none of %q, %q, %q", goos, d, home, xdg, db)
				}
			}
		}
	})
}

// under reports whether dir is home joined with more, home taken as given or
// cleaned (path.Join cleans a Unix home: "//0" gives "/0/.config").
func under(dir, home string) bool {
	return home != "" && (strings.HasPrefix(dir, strings.TrimRight(home, `\/`)) || strings.HasPrefix(dir, path.Clean(home)))
}
