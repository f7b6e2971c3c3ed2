// The Extism plugin fixtures of the runtime's tests (v1, v2), built with the
// Extism Go PDK, which the server does not need (RATIONALE.md, "Guests and
// tools with their own go.mod").
module github.com/warden-run/warden/runtime/testdata/extism

go 1.26.8

require github.com/extism/go-pdk v1.1.3
