// Package memory is the warden.memory capability: the project memory store,
// a set of markdown notes that tools keep across calls and sessions.
//
// Each memory is a topic, a path-like name such as "arch/db" (see
// ValidateTopic), stored as <project>/.warden/memories/<topic>.md. The files
// are ordinary markdown that people may read, edit and commit. warden opens
// them one path component at a time through os.Root and never follows a
// symbolic link: a link at .warden, .warden/memories, a topic directory, a
// topic file or the lock file makes the operation denied, naming the topic
// and the link's store path (never its target). A topic file with more than
// one hard link is not read (get, append). The fs capability's deny-list
// (built-in and security.deny, see Config.Deny) applies to each topic's file.
//
// Writes are atomic and durable (temp file, fsync, rename, fsync of the
// directory) and serialized across processes by a lock (flock; LockFileEx on
// Windows) on .warden/memories.lock: a writer killed at any instant leaves each memory
// either as it was or as written, never torn or empty.
//
// # Backends
//
// The above is the file store, the default. With Config.Backend a
// postgres:// URL (config memory.backend), memories live in a PostgreSQL
// table that replicas share instead (postgres.go): each operation is one
// SQL statement, bounded by Config.QueryTimeout, so an append is atomic
// across processes and machines. Everything but storage (topic validation,
// grants, deny rules applied to the path the file store would use, the
// value limit, list bounds, error kinds and messages) is shared by both
// backends (backend.go); links and hard links exist only in the file store.
//
// # Grants
//
// Config grants a tool memory: read (get, list) or memory: read-write (also
// set, append, delete) under tools.grants.<tool>.memory. memory_topics
// (Capabilities.MemoryTopics), when present, limits every operation
// to topics within the listed prefixes; prefixes match whole components, so
// "arch" covers "arch" and "arch/db" but not "archive". A tool without a
// memory grant is denied every request.
//
// # Operations
//
// Requests are JSON objects with an "op"; unknown fields are refused.
//
//	get     {"op":"get","topic":"arch/db"}
//	        → {"topic":"arch/db","value":"...","modified":"2026-01-02T15:04:05Z"}
//	        "truncated": true is added when the file is larger than the value
//	        limit (edited by hand) and value holds its first bytes.
//	        not_found when the topic has no memory.
//	set     {"op":"set","topic":"arch/db","value":"# DB\n..."}
//	        → {"topic":"arch/db","size":123}
//	append  {"op":"append","topic":"log","value":"- one more line\n"}
//	        → {"topic":"log","size":456}   (creates the memory if missing;
//	        value is appended as is, add your own newline)
//	list    {"op":"list","prefix":"arch"}   (prefix optional)
//	        → {"topics":[{"topic":"arch/db","size":123,"modified":"..."}]}
//	        sorted by topic, at most 1000, with "truncated": true beyond;
//	        only topics the grant covers are listed. Links, hard-linked
//	        files and denied topics are left out and counted in
//	        "skipped": {"symlinks":n,"hardLinks":n,"denied":n}.
//	delete  {"op":"delete","topic":"arch/db"}
//	        → {"topic":"arch/db","deleted":true}   (false when there was none)
//
// Values are UTF-8 text of at most Config.MaxValueBytes (256 KiB by default)
// after an append. Errors: invalid_arguments (bad request, bad topic, value
// too large), denied (no grant, read-only grant writing, topic outside
// memory_topics, a link or hard link in the store, a deny rule; the message
// names the config key that would grant it, or the link),
// not_found (get of a missing topic), cancelled or timeout (the call ended
// while waiting for the lock), failed (I/O).
package memory
