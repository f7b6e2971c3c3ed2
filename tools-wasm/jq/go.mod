module github.com/warden-run/warden/tools-wasm/jq

go 1.26.8

require (
	github.com/itchyny/gojq v0.12.20
	github.com/warden-run/warden v0.0.0-00010101000000-000000000000
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
)

// The tool is built from this checkout's SDK and wire contract, never from a
// published warden (RATIONALE.md, "Guests and tools with their own go.mod").
replace github.com/warden-run/warden => ../..
