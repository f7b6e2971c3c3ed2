// Command benchtable's own module: golang.org/x/perf is for make bench,
// not for the server (RATIONALE.md, "Guests and tools with their own go.mod").
module github.com/warden-run/warden/bench/benchtable

go 1.26.8

require golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da

require github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
