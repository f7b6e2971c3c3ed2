//go:build tools

package runtime

// The Extism plugin fixtures under testdata/extism are built with the
// Extism Go PDK. testdata is invisible to `go mod tidy`; this import, never
// built, keeps the PDK in go.mod.
import _ "github.com/extism/go-pdk"
