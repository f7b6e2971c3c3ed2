// Package fs is warden's file capability, served to guests as the import
// warden.fs (docs/abi.md): one JSON request in, one JSON reply out.
//
// # Paths and roots
//
// Files live in roots. The project root is config project.root (default:
// the working directory); extra roots are named in project.roots, e.g.
// {"notes": "/home/me/notes"}. A guest path is
//
//	src/main.go          relative to the project root
//	notes:todo/today.md  relative to the extra root "notes" ("notes:" is its top)
//	project:src/main.go  the project root, by name
//	./a:b                a project file whose name contains a colon
//	/abs/path            accepted only if it lies inside a root
//
// Paths are cleaned lexically ("a/../b" is "b"); one that climbs out of its
// root ("../x") is denied. A path longer than 4096 bytes, with a component
// longer than 255 bytes, or with a NUL byte is rejected as
// invalid_arguments before any system call. Replies name files in the same
// form, never by host path.
//
// # Grants
//
// Only config grants access: tools.grants.<tool>.fs.read and .fs.write list
// paths written as above ("." is the whole project root, "notes:" or
// "notes:." a whole extra root), arriving per call in call.Grants.FS. A
// grant covers the path and everything beneath it. Read ops (read, list,
// stat, glob, search) need a read grant, write ops (write, append, mkdir,
// remove) a write grant; neither implies the other.
//
// # Deny-list
//
// A deny-list always wins over grants: built-in rules (pathguard.BuiltinDeny:
// ~/.ssh, ~/.aws, shell history, /etc/shadow, /proc/*/environ, .env, *.pem,
// id_rsa*, ...) plus config security.deny. Rules are checked, ignoring case,
// against the path as written and against its real path after symlinks;
// list, glob and search leave deny-listed entries out as if they did not
// exist. Symlinks are followed only within their root (os.Root), and the
// real path must also be granted.
//
// Paths mean what the host's file system makes of them (pathguard.Rules).
// On Windows "\" separates too, absolute paths may be drive, UNC or "\\?\"
// paths, trailing dots and spaces are stripped and "name::$DATA" is the file
// itself before the deny-list is matched; device names (CON, NUL.txt,
// COM1, ...), other alternate data streams ("a.txt:s") and 8.3 short names
// that may stand for a denied name are refused. On Windows and macOS an
// absolute path finds its root ignoring case; names within a root are
// compared with grants exactly, as a volume may be case-sensitive.
//
// A denial is a "denied" error that names the rule and the config key that
// would grant access, worded the same whether or not the path exists:
//
//	read "docs/a.md": not granted; grant it with tools.grants.mytool.fs.read: ["docs"]
//	read "config/.env": matches deny rule ".env" (built-in); deny rules always win over grants ...
//
// # Operations
//
// Every request is an object with "op"; unknown fields are rejected.
//
// read: {"op":"read","path":"src/a.go"} reads the whole file, up to
// maxBytes (default and ceiling Limits.MaxReadBytes, 1 MiB). With "offset"
// (lines to skip, 0-based) and/or "limit" (lines to return) it reads by
// lines. Reply: {"path","content","encoding"?,"size","offset","lines",
// "truncated"?,"nextOffset"?}; encoding is "base64" when the content is not
// UTF-8; truncated means a byte limit cut the content; nextOffset, when
// present, is the offset that continues the read (text is cut at a line end).
//
// list: {"op":"list","path":"src","limit"?} lists a directory ("" is ".").
// Reply: {"path","entries":[{"name","type","size"?}],"truncated"?}, sorted
// by name; type is file, dir, symlink or other (symlinks are not followed).
//
// stat: {"op":"stat","path":"src/a.go"}. Reply: {"path","type","size",
// "mode":"0644","modTime" (RFC 3339),"symlink"?}; a symlink is followed.
//
// glob: {"op":"glob","pattern":"src/**/*.go","limit"?}; "**" crosses
// directories, "{a,b}" alternates, "notes:**/*.md" globs an extra root.
// Only granted subtrees are walked; symlinked directories are not entered.
// Reply: {"matches":["src/a.go",...],"truncated"?}.
//
// search: {"op":"search","pattern":"func \\w+","path":"src"?,"glob":"**/*.go"?,
// "ignoreCase"?,"maxFiles"?,"maxMatches"?,"maxBytes"?} searches files for an
// RE2 regular expression (at most 1024 bytes), line by line. path (default
// ".") is a directory or a file; glob filters by root-relative path or base
// name. Files with a NUL byte in their first 8000 bytes are skipped.
// Reply: {"matches":[{"path","line","column","text"}],"filesScanned",
// "bytesScanned","truncated"?}; line and column are 1-based, text is the
// line cut to 512 bytes.
//
// write: {"op":"write","path":"out/a.txt","content":"...","encoding"?}
// creates or replaces a file (mode 0644); encoding "base64" decodes content
// first. The parent directory must exist. append: the same, appending.
// Reply: {"path","bytes"}. Content is limited to Limits.MaxWriteBytes.
//
// mkdir: {"op":"mkdir","path":"out/a/b"} creates the directory and its
// parents. Reply: {"path"}.
//
// remove: {"op":"remove","path":"out/a","recursive"?} removes a file,
// symlink (not its target) or empty directory; with recursive, a whole tree,
// refused as denied if anything in it is deny-listed. A root itself cannot
// be removed. Reply: {"path"}.
//
// Errors: invalid_arguments (malformed request or path, wrong file type),
// denied (grants, deny-list, escapes), not_found, cancelled, failed (any
// other I/O error).
//
// There is no WASI preopen: a guest reads files through warden.fs only.
package fs
