package pathguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"

	"github.com/warden-run/warden/tool"
)

// The per-OS tables run on every machine: a guard under ForOS rules judges
// another machine's config as strings, which is all the lexical gate does.

// osGuard is a guard on a made-up machine of rules: its project root, an
// extra root and a home directory in that OS's form, warden's config file
// as an own file, and the user's deny rules.
func osGuard(tb testing.TB, rules Rules) *Guard {
	tb.Helper()
	cfg := Config{
		ProjectDir: "/Users/me/proj",
		Roots:      map[string]string{"notes": "/Volumes/notes"},
		Home:       "/Users/me",
		Deny:       []string{"secrets/**", "café.txt", "secrets.json", "/Users/me/private"},
		Own:        []OwnFile{{Pattern: rules.Literal("/Users/me/proj/config.yaml"), What: "config file"}},
		Rules:      rules,
	}
	if rules.windows() {
		cfg.ProjectDir, cfg.Home = `C:\Users\me\proj`, `C:\Users\me`
		cfg.Roots = map[string]string{"notes": `\\srv\share\notes`, "data": `D:\data`}
		cfg.Deny[3] = `C:\Users\me\private`
		cfg.Own[0].Pattern = rules.Literal(`C:\Users\me\proj\config.yaml`)
	}
	g, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// The exact denials, as the gate words them.
func ruleDenial(p, pattern, source string) string {
	return fmt.Sprintf("denied: read %q: matches deny rule %q (%s); deny rules always win over grants and also apply to the real path behind symlinks", p, pattern, source)
}

func ownDenial(p string) string {
	return fmt.Sprintf("denied: read %q: warden's own config file; no grant can allow a tool to read or write it", p)
}

func deviceDenial(p, comp string) string {
	return fmt.Sprintf("denied: read %q: %q is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension); it opens a device, not a file", p, comp)
}

func streamDenial(p, comp string) string {
	return fmt.Sprintf("denied: read %q: %q names an alternate data stream; only a file's default stream may be read or written (name it without \":stream\")", p, comp)
}

func shortDenial(p, comp, pattern, source string) string {
	return fmt.Sprintf("denied: read %q: %q may be the 8.3 short name of a name that matches deny rule %q (%s); deny rules always win over grants and also apply to the real path behind symlinks", p, comp, pattern, source)
}

type osCase struct {
	path string
	// rel is the target's root-relative path when the path is allowed;
	// err is the exact denial otherwise.
	rel, err string
	kind     tool.Kind
}

func runOSCases(t *testing.T, g *Guard, cases []osCase) {
	t.Helper()
	for _, tc := range cases {
		tg, err := g.Check("read", Read, "t", []string{"."}, tc.path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %q: %v; want allowed as %q", g.sys, tc.path, err, tc.rel)
		case tc.err == "" && tg.Rel != tc.rel:
			t.Errorf("%s %q: allowed as %q; want %q", g.sys, tc.path, tg.Rel, tc.rel)
		case tc.err != "" && err == nil:
			t.Errorf("%s %q: allowed as %q; want %s", g.sys, tc.path, tg.Rel, tc.err)
		case tc.err != "":
			var te *tool.Error
			kind := tc.kind
			if kind == "" {
				kind = tool.KindDenied
			}
			if !errors.As(err, &te) || te.Kind != kind || err.Error() != tc.err {
				t.Errorf("%s %q:\n got %v\nwant %s", g.sys, tc.path, err, tc.err)
			}
		}
	}
}

// TestWindowsRules names each Windows naming trick with the denial it gets,
// and the names that look like one but are not.
func TestWindowsRules(t *testing.T) {
	g := osGuard(t, ForOS("windows"))
	const builtin, user = SourceBuiltin, SourceConfig
	outside := func(p string) string {
		return fmt.Sprintf("denied: read %q: outside every root (roots: project, data, notes); add its directory to project.roots to grant it", p)
	}
	invalidArgs := func(p, why string) string { return fmt.Sprintf("invalid_arguments: read %q: %s", p, why) }
	devicePath := `a Win32 device path (\\.\ or \\?\ not followed by a drive or UNC\); only files in a root can be named`
	runOSCases(t, g, []osCase{
		// Both separators, drive letters in any case, \\?\ paths, all in the root.
		{path: `src\a.go`, rel: "src/a.go"},
		{path: `src/deep\c.go`, rel: "src/deep/c.go"},
		{path: `C:\Users\me\proj\src\a.go`, rel: "src/a.go"},
		{path: `c:/users/ME/PROJ/src/a.go`, rel: "src/a.go"},
		{path: `\\?\C:\Users\me\proj\src\a.go`, rel: "src/a.go"},
		{path: `C:\Users\me\proj`, rel: "."},
		// The default stream and trailing dots are the file itself.
		{path: `src\a.go::$DATA`, rel: "src/a.go"},
		{path: `readme.txt. .`, rel: "readme.txt"},
		// False positives: names that merely look like tricks.
		{path: "CONSOLE.txt", rel: "CONSOLE.txt"},
		{path: "nullable.go", rel: "nullable.go"},
		{path: "COM10", rel: "COM10"},
		{path: "src/LPT", rel: "src/LPT"},
		{path: "a~1b", rel: "a~1b"},
		{path: "NOTES~1.TXT", rel: "NOTES~1.TXT"},
		{path: "résumé.txt", rel: "résumé.txt"},

		// Case and Unicode: the deny-list folds as NTFS (and more).
		{path: ".ENV", err: ruleDenial(".ENV", ".env", builtin)},
		{path: "CAFÉ.TXT", err: ruleDenial("CAFÉ.TXT", "café.txt", user)},
		{path: "cafe\u0301.txt", err: ruleDenial("cafe\u0301.txt", "café.txt", user)},
		{path: `SECRETS\a.txt`, err: ruleDenial(`SECRETS\a.txt`, "secrets/**", user)},
		// Trailing dots and spaces, stripped as Win32 does.
		{path: ".env.", err: ruleDenial(".env.", ".env", builtin)},
		{path: ".env ", err: ruleDenial(".env ", ".env", builtin)},
		{path: ".env. .", err: ruleDenial(".env. .", ".env", builtin)},
		{path: `src\.env..\x`, err: ruleDenial(`src\.env..\x`, ".env", builtin)},
		// Alternate data streams: a denied name in every stream spelling.
		{path: ".env:x", err: ruleDenial(".env:x", ".env", builtin)},
		{path: ".env::$DATA", err: ruleDenial(".env::$DATA", ".env", builtin)},
		{path: `src\.Env::$data`, err: ruleDenial(`src\.Env::$data`, ".env", builtin)},
		{path: "config/.env.prod:x:$DATA", err: ruleDenial("config/.env.prod:x:$DATA", ".env.*", builtin)},
		{path: "notes.txt:secret", err: streamDenial("notes.txt:secret", "notes.txt:secret")},
		{path: `src\a.go:s:$DATA`, err: streamDenial(`src\a.go:s:$DATA`, "a.go:s:$DATA")},
		{path: "a.go:", err: streamDenial("a.go:", "a.go:")},
		// Reserved device names, refused outright.
		{path: "CON", err: deviceDenial("CON", "CON")},
		{path: "nul.txt", err: deviceDenial("nul.txt", "nul.txt")},
		{path: "NUL .txt", err: deviceDenial("NUL .txt", "NUL .txt")},
		{path: "nul.tar.gz", err: deviceDenial("nul.tar.gz", "nul.tar.gz")},
		{path: `src\AUX`, err: deviceDenial(`src\AUX`, "AUX")},
		{path: "prn.", err: deviceDenial("prn.", "prn.")},
		{path: "COM1", err: deviceDenial("COM1", "COM1")},
		{path: "lpt9.log", err: deviceDenial("lpt9.log", "lpt9.log")},
		{path: "COM¹", err: deviceDenial("COM¹", "COM¹")},
		{path: "lpt³.txt", err: deviceDenial("lpt³.txt", "lpt³.txt")},
		{path: "CONIN$", err: deviceDenial("CONIN$", "CONIN$")},
		{path: "./aux:x", err: streamDenial("./aux:x", "aux:x")},
		{path: "zz:x", kind: tool.KindInvalidArguments, err: invalidArgs("zz:x", `unknown root "zz" (roots: project, data, notes); write "./zz:x" for a file of that name in the project root`)},
		// 8.3 short names that may stand for a denied name.
		{path: "SECRE~1.JSO", err: shortDenial("SECRE~1.JSO", "SECRE~1.JSO", "secrets.json", user)},
		{path: `src\ENV~2.PRO`, err: shortDenial(`src\ENV~2.PRO`, "ENV~2.PRO", ".env.*", builtin)},
		{path: "ssh~1/config", err: shortDenial("ssh~1/config", "ssh~1", "~/.ssh", builtin)},
		{path: "ID_RS~1", err: shortDenial("ID_RS~1", "ID_RS~1", "id_rsa*", builtin)},
		{path: "BASH_H~1", err: shortDenial("BASH_H~1", "BASH_H~1", ".bash_history", builtin)},
		{path: "SECRET~1.PEM", err: ruleDenial("SECRET~1.PEM", "*.pem", builtin)},
		{path: "CONFIG~1.YAM", err: `denied: read "CONFIG~1.YAM": "CONFIG~1.YAM" may be the 8.3 short name of warden's own config file; name it by its long name`},
		// warden's own files in every spelling.
		{path: "CONFIG.YAML.", err: ownDenial("CONFIG.YAML.")},
		{path: "config.yaml::$DATA", err: ownDenial("config.yaml::$DATA")},
		{path: `\\?\c:\users\me\proj\Config.yaml`, err: ownDenial(`\\?\c:\users\me\proj\Config.yaml`)},
		// Absolute paths: the home-directory rules in every volume spelling.
		{path: `C:\Users\me\.ssh\id_rsa`, err: ruleDenial(`C:\Users\me\.ssh\id_rsa`, "~/.ssh", builtin)},
		{path: `c:/USERS/me/.SSH`, err: ruleDenial(`c:/USERS/me/.SSH`, "~/.ssh", builtin)},
		{path: `\\?\C:\Users\me\.ssh\config`, err: ruleDenial(`\\?\C:\Users\me\.ssh\config`, "~/.ssh", builtin)},
		{path: `C:\Users\me\.ssh.\x`, err: ruleDenial(`C:\Users\me\.ssh.\x`, "~/.ssh", builtin)},
		{path: `C:\Users\me\.aws:creds`, err: ruleDenial(`C:\Users\me\.aws:creds`, "~/.aws", builtin)},
		{path: `C:\Users\me\proj\..\private\x`, err: ruleDenial(`C:\Users\me\proj\..\private\x`, `C:\Users\me\private`, user)},
		{path: `E:\x`, err: outside(`E:\x`)},
		{path: `\\srv\share\other\x`, err: outside(`\\srv\share\other\x`)},
		// Device paths, and paths relative to a drive's current directory.
		{path: `\\.\PhysicalDrive0`, err: "denied: read " + fmt.Sprintf("%q", `\\.\PhysicalDrive0`) + ": " + devicePath},
		{path: `\\?\GLOBALROOT\Device\x`, err: "denied: read " + fmt.Sprintf("%q", `\\?\GLOBALROOT\Device\x`) + ": " + devicePath},
		{path: `//./pipe/x`, err: "denied: read " + fmt.Sprintf("%q", `//./pipe/x`) + ": " + devicePath},
		{path: "C:foo", kind: tool.KindInvalidArguments, err: invalidArgs("C:foo", `relative to the current directory of drive C:; write a path relative to a root, or an absolute one (C:\…)`)},
		{path: `\foo`, kind: tool.KindInvalidArguments, err: invalidArgs(`\foo`, `rooted on the current drive ("\…" without a drive letter); write a path relative to a root, or with its drive (C:\…)`)},
		{path: `\\srv`, kind: tool.KindInvalidArguments, err: invalidArgs(`\\srv`, `a UNC path needs a server and a share (\\server\share\…)`)},
		{path: "a|b", kind: tool.KindInvalidArguments, err: invalidArgs("a|b", `component "a|b" holds a character Windows file names cannot (<>"|?* or a control character)`)},
		{path: "...", kind: tool.KindInvalidArguments, err: invalidArgs("...", `component "..." is only dots and spaces, which Windows strips to no name`)},
		{path: `..\x`, err: `denied: read "..\\x": outside root "project"; paths may not leave their root`},
		{path: `src\.. \x`, kind: tool.KindInvalidArguments, err: invalidArgs(`src\.. \x`, `component ".. " is only dots and spaces, which Windows strips to no name`)},
		{path: "secrets.json.", err: ruleDenial("secrets.json.", "secrets.json", user)},
	})
}

// TestWindowsGrantsAndRoots checks that grants and roots written the
// Windows way (config on Windows: C:\Users\me\proj) parse under the Windows
// rules and compare with requests after the same normalisation: the root's
// volume and directories in any case, the names within a root as written,
// since a volume may be case-sensitive and there a grant must not reach
// another case.
func TestWindowsGrantsAndRoots(t *testing.T) {
	g := osGuard(t, ForOS("windows"))
	for _, tc := range []struct {
		grant, path, rel string
		ok               bool
	}{
		{"src", `src\a.go`, "src/a.go", true},
		{`C:\Users\me\proj\src`, "src/a.go", "src/a.go", true},
		{`c:/users/ME/PROJ/src.`, `src\deep\c.go::$DATA`, "src/deep/c.go", true},
		{`\\?\C:\Users\me\proj\src`, `C:\USERS\me\proj\src\a.go`, "src/a.go", true},
		{`\\SRV\Share\notes\drafts`, `notes:drafts\a.md`, "drafts/a.md", true},
		{`notes:drafts`, `\\?\UNC\srv\share\notes\drafts\a.md`, "drafts/a.md", true},
		{`D:\data`, `d:\DATA\x`, "x", true},
		{"src", `srcx\a.go`, "", false},
		{"src", `SRC\a.go`, "", false},
		{`C:\Users\me\proj\src`, `C:\Users\me\proj\Src\a.go`, "", false},
		{"src", `C:\Users\me\proj\docs\a.md`, "", false},
		{"notes:drafts", `notes:drafts2\a.md`, "", false},
	} {
		tg, err := g.Check("read", Read, "t", []string{tc.grant}, tc.path)
		if tc.ok && (err != nil || tg.Rel != tc.rel) {
			t.Errorf("grant %q, read %q: %q, %v; want allowed as %q", tc.grant, tc.path, tg.Rel, err, tc.rel)
		}
		if !tc.ok && err == nil {
			t.Errorf("grant %q, read %q: allowed as %q", tc.grant, tc.path, tg.Rel)
		}
	}
	// The grant screen (warden grant) judges a Windows config's grants by
	// the same gate, on any machine.
	for p, want := range map[string]string{
		`C:\Users\me\.ssh`:     ruleDenial(`C:\Users\me\.ssh`, "~/.ssh", SourceBuiltin),
		`src\.env::$DATA`:      ruleDenial(`src\.env::$DATA`, ".env", SourceBuiltin),
		`C:\Users\me\proj\CON`: deviceDenial(`C:\Users\me\proj\CON`, "CON"),
		`E:\`:                  `denied: read "E:\\": outside every root (roots: project, data, notes); add its directory to project.roots to grant it`,
	} {
		want = strings.Replace(want, "read", "grant fs.read", 1)
		if _, err := g.CheckGrant(Read, "t", p); err == nil || err.Error() != want {
			t.Errorf("CheckGrant(%q) = %v\nwant %s", p, err, want)
		}
	}
	if exists, err := g.CheckGrant(Read, "t", `C:\Users\me\proj\src`); err != nil || exists {
		t.Errorf("CheckGrant of a foreign machine's path = %v, %v; want no refusal and nothing looked up", exists, err)
	}
	// Grant edits refuse warden's own files in every Windows spelling.
	for _, p := range []string{"config.yaml::$DATA", "CONFIG.YAML. ", `c:\users\me\proj\config.yaml:x`} {
		want := fmt.Sprintf("denied: grant %q: warden's own config file; no grant can allow a tool to read or write it", p)
		if err := g.OwnFile("grant", p); err == nil || err.Error() != want {
			t.Errorf("OwnFile(%q) = %v\nwant %s", p, err, want)
		}
	}
	if err := g.OwnFile("grant", "notes.txt:x"); err != nil {
		t.Errorf("OwnFile of a stream of another file = %v", err)
	}
	// A one-letter root name would be a drive.
	if _, err := New(Config{ProjectDir: `C:\p`, Roots: map[string]string{"D": `D:\x`}, Home: `C:\h`, Rules: ForOS("windows")}); err == nil ||
		!strings.Contains(err.Error(), `root name "D": one letter names a drive on Windows (D:\); use a longer name`) {
		t.Errorf("one-letter root: %v", err)
	}
	// Literal quotes a Windows path's glob characters for its own rules.
	for _, p := range []string{`C:\a[1]\{b}`, `\\srv\share\x`} {
		if got, want := ForOS("windows").Covers(p, p), true; got != want {
			t.Errorf("Covers(%q, itself) = %v", p, got)
		}
		r, err := compileRule(ForOS("windows"), "", ForOS("windows").Literal(p), SourceOwn)
		if err != nil {
			t.Fatal(err)
		}
		abs, _, _ := ForOS("windows").cleanAbs(p)
		if !r.matchAbs(fold(abs)) || r.matchAbs(fold(abs+"x")) {
			t.Errorf("Literal(%q) = %q does not match only itself", p, ForOS("windows").Literal(p))
		}
	}
}

// TestDarwinRules: APFS ignores case and the normalization form, so a rule
// for .env stops .ENV and a rule naming café.txt its NFD spelling, and an
// absolute path finds its root in any case. Nothing else changes from Linux.
func TestDarwinRules(t *testing.T) {
	g := osGuard(t, ForOS("darwin"))
	nfd := norm.NFD.String("café.txt")
	runOSCases(t, g, []osCase{
		{path: ".ENV", err: ruleDenial(".ENV", ".env", SourceBuiltin)},
		{path: "src/.Env.local", err: ruleDenial("src/.Env.local", ".env.*", SourceBuiltin)},
		{path: nfd, err: ruleDenial(nfd, "café.txt", SourceConfig)},
		{path: "CAFÉ.TXT", err: ruleDenial("CAFÉ.TXT", "café.txt", SourceConfig)},
		{path: "/USERS/ME/.SSH/id", err: ruleDenial("/USERS/ME/.SSH/id", "~/.ssh", SourceBuiltin)},
		{path: "Config.YAML", err: ownDenial("Config.YAML")},
		{path: "/users/me/PROJ/src/a.go", rel: "src/a.go"},
		{path: "/Volumes/NOTES/x.md", err: `denied: read "/Volumes/NOTES/x.md": not granted; grant it with tools.grants.t.fs.read: ["notes:x.md"]`},
		// Not Windows: these are plain names.
		{path: "CON", rel: "CON"},
		{path: "nul.txt", rel: "nul.txt"},
		{path: "ENV~1", rel: "ENV~1"},
		{path: "secrets.json.", rel: "secrets.json."},
		{path: "./a:b", rel: "a:b"},
		{path: `src\.env`, rel: `src\.env`},
	})
	for _, tc := range []struct {
		grant, path string
		ok          bool
	}{
		{"/Users/me/proj/src", "src/a.go", true},
		{"src", "/users/ME/proj/src/a.go", true},
		{"/USERS/me/proj/src", "src/a.go", true},
		// Names within a root stay exact: a volume may be case-sensitive.
		{"src", "SRC/a.go", false},
		{"résumé", norm.NFD.String("résumé") + "/cv.pdf", false},
	} {
		_, err := g.Check("read", Read, "t", []string{tc.grant}, tc.path)
		if tc.ok != (err == nil) {
			t.Errorf("grant %q, read %q: %v; want allowed %v", tc.grant, tc.path, err, tc.ok)
		}
	}
}

// TestPOSIXRulesUnchanged: under Linux rules names are case-sensitive bytes
// for grants, a colon, a backslash, a trailing dot or a device name is an
// ordinary character or name, and the deny-list is the one of every OS.
func TestPOSIXRulesUnchanged(t *testing.T) {
	g := osGuard(t, ForOS("linux"))
	runOSCases(t, g, []osCase{
		{path: "./.env:x", rel: ".env:x"},
		{path: "./a.txt:secret", rel: "a.txt:secret"},
		{path: "secrets.json.", rel: "secrets.json."},
		{path: ".env ", rel: ".env "},
		{path: "CON", rel: "CON"},
		{path: "NUL.txt", rel: "NUL.txt"},
		{path: "ENV~1", rel: "ENV~1"},
		{path: `src\.env`, rel: `src\.env`},
		{path: "C:foo", err: `invalid_arguments: read "C:foo": unknown root "C" (roots: project, notes); write "./C:foo" for a file of that name in the project root`, kind: tool.KindInvalidArguments},
		{path: ".ENV", err: ruleDenial(".ENV", ".env", SourceBuiltin)},
	})
	if _, err := g.Check("read", Read, "t", []string{"src"}, "SRC/a.go"); err == nil {
		t.Error(`grant "src" covers "SRC/a.go" under Linux rules`)
	}
}

// osOracle reports whether p names, in one of its components as the file
// system of rules would open it, a name a name-pattern of the deny-list
// matches. It is written apart from the guard: split at every separator
// (and, on Windows, at every stream colon), strip what Win32 strips, lower
// the case, compose.
func osOracle(rules Rules, patterns []string, p string) bool {
	seps := "/"
	if rules.windows() {
		seps = `/\:`
	}
	for _, piece := range strings.FieldsFunc(p, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if rules.windows() {
			piece = strings.TrimRight(piece, ". ")
		}
		piece = strings.ToLower(norm.NFC.String(piece))
		for _, pat := range patterns {
			if ok, _ := doublestar.Match(strings.ToLower(norm.NFC.String(pat)), piece); ok {
				return true
			}
		}
	}
	return false
}

// FuzzOSRules is the property across the rule sets: under the Windows and
// the macOS rules, with every path granted, the gate never allows a path
// one of whose components, normalised as that file system does, a deny
// rule matches.
func FuzzOSRules(f *testing.F) {
	for _, seed := range []string{
		".env", ".ENV", ".env.", ".env. .", ".env:x", ".env::$DATA", `src\.env`, "notes:.env",
		"cafe\u0301.txt", "CAFÉ.TXT", "SECRET~1.PEM", "id_rsa.pub:x", `\\?\C:\Users\me\proj\.env`,
		`C:\Users\me\proj\src\.Env::$data`, "a/b/.bash_history ", "x.KEY.", "NUL", "COM¹",
	} {
		f.Add(seed)
	}
	var patterns []string
	for _, p := range append(BuiltinDeny, "secrets.json", "café.txt") {
		if !strings.Contains(p, "/") {
			patterns = append(patterns, p)
		}
	}
	guards := []*Guard{osGuard(f, ForOS("windows")), osGuard(f, ForOS("darwin"))}
	f.Fuzz(func(t *testing.T, p string) {
		for _, g := range guards {
			if !g.sys.Covers(p, p) {
				t.Fatalf("%s rules: Covers(%q, itself) = false", g.sys, p)
			}
			// What config cannot change (syntax) the syntax check refuses
			// too; only an unknown root is config's to tell.
			var te *tool.Error
			if _, err := g.Parse("grant", p); errors.As(err, &te) && te.Kind == tool.KindInvalidArguments &&
				!strings.Contains(te.Message, "unknown root") && g.sys.ValidateGrantSyntax(p) == nil {
				t.Fatalf("%s rules: %q passes ValidateGrantSyntax but Parse refuses it: %v", g.sys, p, err)
			}
			tg, err := g.Check("read", Read, "t", []string{".", "notes:", "data:"}, p)
			if err == nil && osOracle(g.sys, patterns, p) {
				t.Fatalf("%s rules allow %q (as %s) though a deny rule matches a component of it", g.sys, p, tg.Path())
			}
		}
	})
}

// TestWindowsShortNameBehindSymlink: a symlink's target may spell a denied
// directory by its 8.3 short name ("ENV~1" for ".env", "SSH~1" for
// ".ssh"). The tool's own path (link\new.txt) passes the lexical gate, and
// GetLongPathName cannot expand a file about to be created, so the real
// path must meet the short-name rule itself.
func TestWindowsShortNameBehindSymlink(t *testing.T) {
	g := osGuard(t, ForOS("windows"))
	tg, err := g.Check("write", Write, "t", []string{"."}, `link\new.txt`)
	if err != nil {
		t.Fatal(err)
	}
	for real, comp := range map[string]string{
		"C:/Users/me/proj/ENV~1/new.txt":        "ENV~1",
		"C:/Users/me/proj/deep/SSH~1/new.txt":   "SSH~1",
		"C:/Users/me/proj/SECRET~1.JSO/new.txt": "SECRET~1.JSO",
	} {
		err := g.CheckReal("write", Write, "t", []string{"."}, tg, real)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q may be the 8.3 short name of", comp)) {
			t.Errorf("CheckReal(%s) = %v; want the short-name refusal of %s", real, err, comp)
		}
	}
	// (Real paths are in the rules' canonical form, as resolve gives them.)
	// A long name behind the link is judged as before.
	if err := g.CheckReal("write", Write, "t", []string{"."}, tg, "C:/Users/me/proj/docs/new.txt"); err != nil {
		t.Errorf("a plain target: %v", err)
	}
}
