// Package download fetches a WebAssembly tool from an https:// URL (what
// `warden install https://…/tool.wasm` names) into a local temp file, and
// the Sigstore bundle published next to it. The server is treated as an
// attacker: everything it controls is bounded, checked, or escaped before it
// reaches disk, the lockfile or a terminal.
//
// Why each rule exists:
//
//   - https only. A tool runs with whatever capabilities config.yaml grants
//     it; fetched over plain http, anyone on the path could swap it. Plain
//     http:// is allowed only for loopback hosts (localhost, 127.0.0.0/8,
//     ::1, by literal: names are not resolved), where there is no path to
//     attack, for local development and tests. A refused URL fails before
//     any connection is made.
//
//   - No credentials in the URL. The URL as given is recorded in
//     config.yaml's lockfile and shown in messages; a user:token@ in it
//     would be written to disk and printed. Error messages never show the
//     userinfo of any URL.
//
//   - Redirects stay on the URL's host. The lockfile records the URL, and a
//     signature policy trusts a publisher for it; both name a host. A
//     redirect to another host would quietly make that host the source of
//     the tool, so it is refused (host:port compared, case-insensitively)
//     unless the target is listed in tools.fetch.redirect_hosts, and the
//     error names both hosts and the config line that would allow it. The
//     typical entry is objects.githubusercontent.com, where GitHub release
//     asset URLs (github.com/OWNER/REPO/releases/download/…) redirect:
//     tools.fetch.redirect_hosts: [objects.githubusercontent.com]. A redirect from https to http is refused whatever the config says (it
//     would undo the first rule), and at most MaxRedirects are followed, so
//     that a redirect loop ends.
//
//   - Status 200 only. A 404 page, a 500 page or a login page is not the
//     tool; the error names the status and the URL. The status is shown by
//     its number and standard name, never the server's reason phrase.
//
//   - Bounded size (tools.fetch.max_size, Options.MaxBytes, 64 MiB by
//     default). A Content-Length over the limit is refused before the body
//     is read; the body is read through a limit of MaxBytes+1 anyway, so a
//     server that sends no length, or lies, cannot fill the disk.
//     Accept-Encoding: identity is sent so the bytes are the ones served,
//     with no decompression of a stranger's input.
//
//   - Bounded time (tools.fetch.timeout, Options.Timeout, 2 minutes by
//     default) for the whole request, body included, so a server that
//     trickles bytes cannot hang an install; the default client also bounds
//     dialing, the TLS handshake and the wait for response headers.
//
//   - A core WebAssembly module only, judged by its first eight bytes with
//     package wasmfile before anything is written: an HTML error page served
//     with 200, or a WebAssembly component warden cannot run, is refused
//     with a message that says what it is, rather than failing later in the
//     loader.
//
//   - Digest while streaming, and no leftovers. The SHA-256 is computed as
//     the bytes are written, the file is fsync'd before it is reported, and
//     on any error the temp file is removed, so Options.Dir holds either a
//     complete, checked module or nothing. The temp name is .fetch-*.tmp,
//     never *.wasm, so a directory watcher that loads *.wasm cannot pick up
//     a partial download.
//
//   - Escaped messages. Anything the server chose that reaches an error
//     (URLs after redirects, transport errors quoting it) goes through
//     package termsafe, so a server cannot write terminal escapes into
//     warden's output.
//
// Bundle fetches the Sigstore bundle published beside a release file, under
// the same rules and bounded at MaxBundleBytes: first URL+".sigstore.json"
// (the name Sigstore's current docs give `cosign sign-blob --bundle` and the
// Sigstore clients use), then URL+".bundle" (cosign's older examples). It
// does not verify the bundle; package sigverify does.
package download
