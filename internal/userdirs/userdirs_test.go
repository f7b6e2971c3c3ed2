package userdirs

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// lookup is a Lookup on goos with exactly env and a user database that
// answers dbHome, or fails when dbHome is "".
func lookup(goos string, env map[string]string, dbHome string) Lookup {
	return Lookup{
		GOOS: goos,
		Getenv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		},
		UserDBHome: func() (string, error) {
			if dbHome == "" {
				return "", errors.New("user: unknown userid 4242")
			}
			return dbHome, nil
		},
	}
}

func TestHome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		goos   string
		env    map[string]string
		dbHome string
		want   string
		err    string
	}{
		{name: "linux env", goos: "linux", env: map[string]string{"HOME": "/home/ann"}, dbHome: "/home/db", want: "/home/ann"},
		{name: "linux no env", goos: "linux", dbHome: "/home/db", want: "/home/db"},
		{name: "linux empty env", goos: "linux", env: map[string]string{"HOME": ""}, dbHome: "/home/db", want: "/home/db"},
		{name: "linux relative env", goos: "linux", env: map[string]string{"HOME": "ann"}, dbHome: "/home/db", want: "/home/db"},
		{name: "linux neither", goos: "linux",
			err: "home directory: $HOME is not set, and the user database gave none: user: unknown userid 4242"},
		{name: "linux empty and no db", goos: "linux", env: map[string]string{"HOME": ""},
			err: "home directory: $HOME is empty, and the user database gave none: user: unknown userid 4242"},
		{name: "linux relative and relative db", goos: "linux", env: map[string]string{"HOME": "ann"}, dbHome: "db",
			err: `home directory: $HOME is a relative path ("ann"), and the user database gave none: its home "db" is not an absolute path`},
		{name: "darwin env", goos: "darwin", env: map[string]string{"HOME": "/Users/ann"}, want: "/Users/ann"},
		{name: "darwin db", goos: "darwin", dbHome: "/Users/db", want: "/Users/db"},
		{name: "windows env", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann`, "HOME": "/ignored"}, want: `C:\Users\ann`},
		{name: "windows HOME is not the home", goos: "windows", env: map[string]string{"HOME": `C:\Users\ann`}, dbHome: `C:\Users\db`, want: `C:\Users\db`},
		{name: "windows UNC", goos: "windows", env: map[string]string{"USERPROFILE": `\\srv\homes\ann`}, want: `\\srv\homes\ann`},
		{name: "windows drive-relative", goos: "windows", env: map[string]string{"USERPROFILE": `C:Users\ann`}, dbHome: `D:\db`, want: `D:\db`},
		{name: "windows neither", goos: "windows",
			err: "home directory: %USERPROFILE% is not set, and the user database gave none: user: unknown userid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookup(tc.goos, tc.env, tc.dbHome).Home()
			check(t, got, err, tc.want, tc.err)
		})
	}
}

func TestConfigAndCacheDir(t *testing.T) {
	for _, tc := range []struct {
		name      string
		goos      string
		env       map[string]string
		dbHome    string
		config    string
		configErr string
		cache     string
		cacheErr  string
	}{
		{name: "linux xdg", goos: "linux", env: map[string]string{"HOME": "/home/ann", "XDG_CONFIG_HOME": "/xc", "XDG_CACHE_HOME": "/xk"},
			config: "/xc", cache: "/xk"},
		{name: "linux home", goos: "linux", env: map[string]string{"HOME": "/home/ann/"},
			config: "/home/ann/.config", cache: "/home/ann/.cache"},
		{name: "linux relative xdg is ignored", goos: "linux", env: map[string]string{"HOME": "/home/ann", "XDG_CONFIG_HOME": "xc", "XDG_CACHE_HOME": "xk"},
			config: "/home/ann/.config", cache: "/home/ann/.cache"},
		{name: "linux no env: user database", goos: "linux", dbHome: "/var/lib/warden",
			config: "/var/lib/warden/.config", cache: "/var/lib/warden/.cache"},
		{name: "linux root home is refused", goos: "linux", dbHome: "/",
			configErr: `configuration directory: the home directory is the file system root ("/") (and $XDG_CONFIG_HOME is not set to an absolute path)`,
			cacheErr:  `cache directory: the home directory is the file system root ("/") (and $XDG_CACHE_HOME is not set to an absolute path)`},
		{name: "linux root home, xdg set", goos: "linux", env: map[string]string{"XDG_CACHE_HOME": "/var/cache/w"}, dbHome: "/",
			cache:     "/var/cache/w",
			configErr: `configuration directory: the home directory is the file system root ("/") (and $XDG_CONFIG_HOME is not set to an absolute path)`},
		{name: "linux xdg is root", goos: "linux", env: map[string]string{"HOME": "/home/ann", "XDG_CACHE_HOME": "//"},
			config: "/home/ann/.config", cacheErr: `cache directory: $XDG_CACHE_HOME is the file system root ("//")`},
		{name: "linux nothing", goos: "linux",
			configErr: "configuration directory: home directory: $HOME is not set, and the user database gave none: user: unknown userid 4242 (and $XDG_CONFIG_HOME is not set to an absolute path)",
			cacheErr:  "cache directory: home directory: $HOME is not set, and the user database gave none: user: unknown userid 4242 (and $XDG_CACHE_HOME is not set to an absolute path)"},
		{name: "freebsd is xdg", goos: "freebsd", env: map[string]string{"HOME": "/usr/home/ann"},
			config: "/usr/home/ann/.config", cache: "/usr/home/ann/.cache"},
		{name: "darwin", goos: "darwin", env: map[string]string{"HOME": "/Users/ann", "XDG_CACHE_HOME": "/ignored"},
			config: "/Users/ann/Library/Application Support", cache: "/Users/ann/Library/Caches"},
		{name: "darwin no env", goos: "darwin", dbHome: "/Users/db",
			config: "/Users/db/Library/Application Support", cache: "/Users/db/Library/Caches"},
		{name: "darwin root home", goos: "darwin", dbHome: "/",
			configErr: `configuration directory: the home directory is the file system root ("/")`,
			cacheErr:  `cache directory: the home directory is the file system root ("/")`},
		{name: "windows vars", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann`, "AppData": `C:\Users\ann\AppData\Roaming`, "LocalAppData": `D:\Local`},
			config: `C:\Users\ann\AppData\Roaming`, cache: `D:\Local`},
		{name: "windows no vars", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann\`},
			config: `C:\Users\ann\AppData\Roaming`, cache: `C:\Users\ann\AppData\Local`},
		{name: "windows user database", goos: "windows", dbHome: `C:\Users\svc`,
			config: `C:\Users\svc\AppData\Roaming`, cache: `C:\Users\svc\AppData\Local`},
		{name: "windows relative var", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann`, "LocalAppData": `Local`},
			config: `C:\Users\ann\AppData\Roaming`, cache: `C:\Users\ann\AppData\Local`},
		{name: "windows drive root", goos: "windows", env: map[string]string{"USERPROFILE": `C:\`, "LocalAppData": `C:/`},
			configErr: `configuration directory: the home directory is the file system root ("C:\\") (and %AppData% is not set to an absolute path)`,
			cacheErr:  `cache directory: %LocalAppData% is the file system root ("C:/")`},
		{name: "windows share root", goos: "windows", env: map[string]string{"USERPROFILE": `\\srv\share\`},
			configErr: `configuration directory: the home directory is the file system root ("\\\\srv\\share\\") (and %AppData% is not set to an absolute path)`,
			cacheErr:  `cache directory: the home directory is the file system root ("\\\\srv\\share\\") (and %LocalAppData% is not set to an absolute path)`},
		{name: "windows nothing", goos: "windows",
			cacheErr:  "cache directory: home directory: %USERPROFILE% is not set, and the user database gave none: user: unknown userid 4242 (and %LocalAppData% is not set to an absolute path)",
			configErr: "configuration directory: home directory: %USERPROFILE% is not set, and the user database gave none: user: unknown userid 4242 (and %AppData% is not set to an absolute path)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lookup(tc.goos, tc.env, tc.dbHome)
			got, err := l.ConfigDir()
			check(t, got, err, tc.config, tc.configErr)
			got, err = l.CacheDir()
			check(t, got, err, tc.cache, tc.cacheErr)
		})
	}
}

func check(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("got %q, %v; want error %q", got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// TestCurrentAgreesWithStdlib: where the environment is complete, the rules
// give what the standard library gives on this OS.
func TestCurrentAgreesWithStdlib(t *testing.T) {
	for _, f := range []struct {
		name      string
		ours, std func() (string, error)
	}{
		{"home", Home, os.UserHomeDir},
		{"config", ConfigDir, os.UserConfigDir},
		{"cache", CacheDir, os.UserCacheDir},
	} {
		want, err := f.std()
		if err != nil {
			t.Skipf("%s: the standard library has no answer here: %v", f.name, err)
		}
		got, err := f.ours()
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; the standard library says %q", f.name, got, err, want)
		}
	}
}

// TestHomeWithoutEnvironment runs the test binary under an empty
// environment, as an init system or `env -i` starts a service: the home
// comes from the user database (with cgo off, /etc/passwd).
func TestHomeWithoutEnvironment(t *testing.T) {
	if os.Getenv("USERDIRS_CHILD") == "1" {
		return
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("the empty-environment child is a Unix test")
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("the user database has no home for this user: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHomeWithoutEnvironmentChild$", "-test.v")
	cmd.Env = []string{"USERDIRS_CHILD=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "home="+u.HomeDir+"\n") {
		t.Fatalf("child did not find the home %q:\n%s", u.HomeDir, out)
	}
}

func TestHomeWithoutEnvironmentChild(t *testing.T) {
	if os.Getenv("USERDIRS_CHILD") != "1" {
		t.Skip("runs as the child of TestHomeWithoutEnvironment")
	}
	if _, ok := os.LookupEnv("HOME"); ok {
		t.Fatal("HOME is set in the child")
	}
	if _, err := os.UserHomeDir(); err == nil {
		t.Fatal("os.UserHomeDir found a home without $HOME: the test proves nothing")
	}
	h, err := Home()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("home=" + h + "\n")
}

func TestStateDir(t *testing.T) {
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		dbHome     string
		want, err  string
	}{
		{name: "linux xdg", goos: "linux", env: map[string]string{"HOME": "/home/ann", "XDG_STATE_HOME": "/xs"}, want: "/xs"},
		{name: "linux home", goos: "linux", env: map[string]string{"HOME": "/home/ann"}, want: "/home/ann/.local/state"},
		{name: "linux relative xdg is ignored", goos: "linux", env: map[string]string{"HOME": "/home/ann", "XDG_STATE_HOME": "xs"}, want: "/home/ann/.local/state"},
		{name: "linux root home is refused", goos: "linux", dbHome: "/",
			err: `state directory: the home directory is the file system root ("/") (and $XDG_STATE_HOME is not set to an absolute path)`},
		{name: "darwin", goos: "darwin", env: map[string]string{"HOME": "/Users/ann", "XDG_STATE_HOME": "/ignored"}, want: "/Users/ann/Library/Application Support"},
		{name: "windows", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann`, "LocalAppData": `D:\Local`}, want: `D:\Local`},
		{name: "windows no vars", goos: "windows", env: map[string]string{"USERPROFILE": `C:\Users\ann`}, want: `C:\Users\ann\AppData\Local`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookup(tc.goos, tc.env, tc.dbHome).StateDir()
			check(t, got, err, tc.want, tc.err)
		})
	}
}
