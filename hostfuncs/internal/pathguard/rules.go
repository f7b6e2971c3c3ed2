package pathguard

import (
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Rules are one operating system's path semantics as pure functions of
// strings: which paths are absolute, which separators split them, which
// spellings one file system opens as the same file, and which names are no
// files at all. The guard applies the host's rules (ForOS(runtime.GOOS));
// tests and checks of another machine's config choose others with
// Config.Rules, so that every OS's rules run, and are tested, everywhere.
//
// The zero Rules are the host's, applied to the host's files. Rules from
// ForOS judge paths as strings only, since the config's paths may name
// another machine's files: roots are taken as written, nothing is looked
// up on disk, and only the lexical gate (Check) is meaningful.
type Rules struct {
	os   osKind
	disk bool // the config's paths are this machine's: consult the disk
}

type osKind int

const (
	osHost osKind = iota // the zero Rules: runtime.GOOS
	osPOSIX
	osDarwin
	osWindows
)

// ForOS returns the path rules of the operating system goos (a GOOS value):
// "windows", "darwin" and "ios" have theirs; every other is POSIX
// (case-sensitive names, "/" the only separator).
func ForOS(goos string) Rules {
	switch goos {
	case "windows":
		return Rules{os: osWindows}
	case "darwin", "ios":
		return Rules{os: osDarwin}
	}
	return Rules{os: osPOSIX}
}

// Host is the rules of the machine warden runs on.
var Host = ForOS(runtime.GOOS)

func (r Rules) resolved() Rules {
	if r.os == osHost {
		return Rules{os: Host.os, disk: true}
	}
	return r
}

// String names the rules: "windows", "darwin" or "posix".
func (r Rules) String() string {
	switch r.resolved().os {
	case osWindows:
		return "windows"
	case osDarwin:
		return "darwin"
	}
	return "posix"
}

// native reports whether the config's paths name this machine's files
// (the zero Rules, resolved).
func (r Rules) native() bool { return r.disk }

func (r Rules) windows() bool { return r.os == osWindows }

// caseless reports whether the file system ignores case (and, on macOS,
// the normalization form), so that roots are located by key.
func (r Rules) caseless() bool { return r.os == osWindows || r.os == osDarwin }

func (r Rules) isSep(c byte) bool { return c == '/' || c == '\\' && r.windows() }

// slash converts r's separators to "/".
func (r Rules) slash(p string) string {
	if r.windows() {
		return strings.ReplaceAll(p, `\`, "/")
	}
	return p
}

// key is the spelling under which the default file system takes two names
// for the same file, for finding the root an absolute path lies in: NTFS
// compares names by the simple upper-case mapping of each UTF-16 unit (its
// upcase table), APFS and HFS+ by case and normalization form. Grants do
// not use it (see Guard.granted). Deny rules fold more widely still (see fold).
func (r Rules) key(s string) string {
	switch r.os {
	case osWindows:
		return strings.Map(unicode.ToUpper, s)
	case osDarwin:
		return strings.Map(func(c rune) rune { return unicode.ToLower(unicode.ToUpper(c)) }, norm.NFD.String(s))
	}
	return s
}

// driveLetter reports whether p starts with a drive ("C:").
func driveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// rootPrefix splits "notes:x" into the root's name and the rest. Under
// Windows rules a one-letter prefix is a drive, not a root.
func (r Rules) rootPrefix(p string) (name, rest string, ok bool) {
	i := strings.IndexByte(p, ':')
	if i <= 0 || !rootName.MatchString(p[:i]) || i == 1 && r.windows() {
		return "", p, false
	}
	return p[:i], strings.TrimLeft(r.slash(p[i+1:]), "/"), true
}

// isAbs reports whether p is absolute under r. Under Windows rules that is
// a drive path ("C:\x", "c:/x"), a UNC path ("\\server\share\x") or a
// device path ("\\?\…", "\\.\…"); "\x" and "C:x" are relative to a current
// drive or directory and are not.
func (r Rules) isAbs(p string) bool {
	if !r.windows() {
		return strings.HasPrefix(p, "/")
	}
	return len(p) >= 2 && r.isSep(p[0]) && r.isSep(p[1]) || driveLetter(p) && len(p) >= 3 && r.isSep(p[2])
}

// hostPath is dir, a path of this machine (a root or the home directory),
// in r's slash form.
func (r Rules) hostPath(dir string) string { return filepath.ToSlash(filepath.Clean(dir)) }

// canonical is a path of this machine in the form guests' absolute paths
// are cleaned to (cleanAbs), so that the two compare: "\\?\C:\p" is "C:/p".
func (r Rules) canonical(dir string) string {
	p := r.hostPath(dir)
	if c, _, w := r.cleanAbs(p); w == nil {
		return c
	}
	return p
}

// join joins an absolute dir and a relative path lexically.
func (r Rules) join(dir, rel string) string {
	vol, rest := r.volume(r.slash(dir))
	return vol + path.Join("/", rest, r.slash(rel))
}

// volume splits a slash-form absolute path into its volume ("C:",
// "//server/share", "" under POSIX rules) and the rest.
func (r Rules) volume(p string) (vol, rest string) {
	if !r.windows() {
		return "", p
	}
	if driveLetter(p) {
		return p[:2], p[2:]
	}
	if strings.HasPrefix(p, "//") {
		// "//server/share": the first two components after "//".
		n, i := 0, 2
		for ; i < len(p); i++ {
			if p[i] == '/' {
				if n++; n == 2 {
					break
				}
			}
		}
		return p[:i], p[i:]
	}
	return "", p
}

// cleanPattern is an absolute deny pattern in the form it is matched in:
// slash-separated and clean. Under Windows rules "\" is a separator in a
// pattern, as doublestar.PathMatch takes it on Windows, so a glob
// metacharacter in a Windows path is quoted by a class (Literal).
func (r Rules) cleanPattern(p string) string {
	vol, rest := r.volume(r.slash(p))
	return vol + path.Clean(rest)
}

// why is a refusal of a path by r, before its op and text are known.
type why struct {
	denied bool // tool.KindDenied, else KindInvalidArguments
	msg    string
}

// cleanAbs is an absolute path p in its canonical form: slash-separated and
// clean, and under Windows rules with its volume parsed, device paths
// refused and each component as Win32 opens it (see winName). notes are the
// components Windows would not open as a file (see note).
func (r Rules) cleanAbs(p string) (string, []note, *why) {
	if !r.windows() {
		return path.Clean(p), nil, nil
	}
	s := r.slash(p)
	if strings.HasPrefix(s, "//?/") || strings.HasPrefix(s, "//./") {
		// The device namespaces: "\\?\C:\x" is "C:\x" without Win32's
		// normalization, "\\?\UNC\srv\share" is "\\srv\share"; anything else
		// there ("\\.\PhysicalDrive0", "\\?\GLOBALROOT", "\\.\pipe\x",
		// "\\?\Volume{…}") is a device or a volume no root can contain.
		rest := s[4:]
		switch {
		case s[2] == '?' && driveLetter(rest) && (len(rest) == 2 || rest[2] == '/'):
			s = rest
		case s[2] == '?' && len(rest) >= 4 && strings.EqualFold(rest[:4], "UNC/"):
			s = "//" + rest[4:]
		default:
			return "", nil, &why{true, `a Win32 device path (\\.\ or \\?\ not followed by a drive or UNC\); only files in a root can be named`}
		}
	}
	vol, rest := r.volume(s)
	if strings.HasPrefix(vol, "//") {
		srv, share, _ := strings.Cut(vol[2:], "/")
		if srv == "" || share == "" {
			return "", nil, &why{false, `a UNC path needs a server and a share (\\server\share\…)`}
		}
	}
	rel, notes, w := r.cleanComponents(rest)
	if w != nil {
		return "", nil, w
	}
	return vol + path.Clean("/"+rel), notes, nil
}

// cleanRel is a relative path p in its canonical form, as cleanAbs.
func (r Rules) cleanRel(p string) (string, []note, *why) {
	if !r.windows() {
		return path.Clean(p), nil, nil
	}
	if driveLetter(p) {
		return "", nil, &why{false, "relative to the current directory of drive " + p[:2] + `; write a path relative to a root, or an absolute one (` + p[:2] + `\…)`}
	}
	if p != "" && r.isSep(p[0]) {
		return "", nil, &why{false, `rooted on the current drive ("\…" without a drive letter); write a path relative to a root, or with its drive (C:\…)`}
	}
	rel, notes, w := r.cleanComponents(r.slash(p))
	if w != nil {
		return "", nil, w
	}
	return path.Clean(rel), notes, nil
}

// note is a component of a path that Windows would open, but not as the
// file the name says: a device or a non-default stream. The gate refuses
// it after the deny-list has had its say, so that a denied name is refused
// by its rule in every spelling.
type note struct {
	name   string // the component as written
	device bool   // a reserved device name, else a stream
}

// cleanComponents applies winName to every component of a slash path.
func (r Rules) cleanComponents(p string) (string, []note, *why) {
	comps := strings.Split(p, "/")
	var notes []note
	for i, c := range comps {
		if c == "" || c == "." || c == ".." {
			continue
		}
		name, n, w := winName(c)
		if w != nil {
			return "", nil, w
		}
		if n != nil {
			notes = append(notes, *n)
		}
		comps[i] = name
	}
	return strings.Join(comps, "/"), notes, nil
}

// winName is the file name Win32 opens for the path component c:
//   - a stream suffix goes: "a.txt::$DATA" is a.txt's default stream, so
//     a.txt; "a.txt:s" (stream s) and "a.txt:s:$DATA" leave a.txt as the
//     name, with a note, since a deny rule for a.txt must stop them too;
//   - trailing dots and spaces go (".env. ." is ".env");
//   - a reserved device name (CON, NUL.txt, COM¹, …) gets a note.
//
// A name that is nothing but dots and spaces, or holds a character Windows
// names cannot (`<>"|?*`, controls), is refused.
func winName(c string) (string, *note, *why) {
	name, stream, hasStream := strings.Cut(c, ":")
	var n *note
	if hasStream && !strings.EqualFold(stream, ":$DATA") {
		n = &note{name: c}
	}
	name = strings.TrimRight(name, ". ")
	if name == "" {
		return "", nil, &why{false, "component " + quote(c) + " is only dots and spaces, which Windows strips to no name"}
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || strings.IndexByte(`<>"|?*`, name[i]) >= 0 {
			return "", nil, &why{false, "component " + quote(c) + " holds a character Windows file names cannot (<>\"|?* or a control character)"}
		}
	}
	if n == nil && isDeviceName(name) {
		n = &note{name: c, device: true}
	}
	return name, n, nil
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// isDeviceName reports whether Win32 opens name as a device whatever the
// directory: CON, PRN, AUX, NUL, CONIN$, CONOUT$, COM0–COM9 and LPT0–LPT9
// (with the superscripts ¹²³ too), in any case, with any extension, and
// with spaces before the extension ("NUL .txt").
func isDeviceName(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(base) < 4 || base[:3] != "COM" && base[:3] != "LPT" {
		return false
	}
	d, size := utf8.DecodeRuneInString(base[3:])
	return 3+size == len(base) && ('0' <= d && d <= '9' || d == '¹' || d == '²' || d == '³')
}

// within returns p relative to dir when p is dir or beneath it, comparing
// names by r's key; both are clean and in r's slash form.
func (r Rules) within(dir, p string) (string, bool) {
	if !r.caseless() {
		return within(dir, p)
	}
	ds := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	ps := strings.Split(strings.TrimSuffix(p, "/"), "/")
	if len(ps) < len(ds) {
		return "", false
	}
	for i, d := range ds {
		if r.key(d) != r.key(ps[i]) {
			return "", false
		}
	}
	if len(ps) == len(ds) {
		return ".", true
	}
	return strings.Join(ps[len(ds):], "/"), true
}

// shortName reports whether c has the form of an 8.3 short name with a
// numeric tail ("SECRET~1.PEM", "ENV~1", "SE1A2B~12.TXT") and splits it
// into the part before "~", and the extension.
func shortName(c string) (base, ext string, ok bool) {
	stem, ext, _ := strings.Cut(c, ".")
	i := strings.LastIndexByte(stem, '~')
	if i < 0 || i == len(stem)-1 || len(stem) > 8 || len(ext) > 3 || strings.ContainsAny(ext, ".~") {
		return "", "", false
	}
	for _, d := range stem[i+1:] {
		if d < '0' || d > '9' {
			return "", "", false
		}
	}
	return strings.ToUpper(stem[:i]), strings.ToUpper(ext), true
}

// mayAbbreviate reports whether the 8.3 short name (base~N.ext) may stand
// for a long name that the deny pattern component pc matches, erring
// towards yes. Windows derives a short name from a long one by dropping
// leading dots, spaces and inner dots of the stem, upper-casing, keeping up
// to six characters of the stem (two and a hash after a few collisions)
// and three of the last extension. A pattern's literal characters up to
// its first metacharacter must agree with that; a metacharacter lets
// anything through.
func mayAbbreviate(base, ext, pc string) bool {
	if strings.HasPrefix(pc, ".") && strings.Count(pc, ".") == 1 {
		// Whether Windows takes ".env" as all stem or all extension (an
		// empty stem, for which it makes one up) is its business: try both.
		if mayAbbreviate(base, ext, "*"+pc) {
			return true
		}
	}
	pc = strings.ToUpper(strings.TrimLeft(pc, ". "))
	var stemP, extP string
	extKnown := true
	if j := strings.LastIndexByte(pc, '.'); j >= 0 && !strings.ContainsAny(pc[j:], "*?[{") {
		stemP, extP = pc[:j], pc[j+1:]
	} else {
		stemP = pc
		extKnown = !strings.ContainsAny(pc, "*?[{")
	}
	if extKnown {
		if len(extP) > 3 {
			extP = extP[:3]
		}
		if ext != extP {
			return false
		}
	}
	lit := stemP
	wild := false
	if k := strings.IndexAny(stemP, "*?[{"); k >= 0 {
		lit, wild = stemP[:k], true
	}
	lit = strings.NewReplacer(".", "", " ", "").Replace(lit)
	if len(base) == 6 && isHex(base[2:]) {
		base = base[:2] // a hashed short name keeps two characters
	}
	switch {
	case strings.HasPrefix(lit, base):
		return true
	case wild:
		return strings.HasPrefix(base, lit)
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789ABCDEF", rune(s[i])) {
			return false
		}
	}
	return true
}
