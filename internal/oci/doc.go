// Package oci fetches a WebAssembly tool from an OCI registry into a local
// temp file, ready for warden's loader (`warden install oci://…`, `sync`,
// `update`, through internal/app). It does not verify signatures: Bundles
// finds them, package sigverify decides what to trust.
//
// Two layouts cover the wasm tools published today:
//
//   - the CNCF Wasm OCI artifact layout (config
//     application/vnd.wasm.config.v0+json, one layer application/wasm),
//     pushed by wkg, oras and Wassette's tooling;
//   - hyper-mcp's plugin images: an ordinary container image built FROM
//     scratch whose tar(+gzip) layer holds /plugin.wasm, pushed with
//     `docker build`/`docker push` (hyper-mcp's src/wasm/oci.rs pulls the
//     layers and extracts the entry that ends in plugin.wasm).
//
// An image index is followed to its wasm entry (platform os wasip1/wasi/wasip2,
// architecture wasm); an index without one is followed only when it has a
// single image entry besides build attestations (what `docker buildx` pushes
// for a FROM scratch plugin), and refused otherwise.
//
// The downloaded module must be a core WebAssembly module. warden runs core
// modules through Extism/wazero; a WebAssembly component (as Wassette
// publishes) has a different binary layer and ABI, and running it would need
// a component runtime warden does not embed. Such an artifact is refused up
// front with a message that says so, rather than failing later in the loader
// with an opaque decode error.
//
// Everything is bounded: manifest bytes, layers and index entries considered,
// blob and extracted sizes (Options.MaxBytes), tar entries; the digest of
// every blob is verified while it streams to disk, and a refusal leaves
// nothing behind in Options.Dir. Registry access goes through oras-go, with
// credentials from the user's Docker config (including credential helpers).
//
// Bundles finds the Sigstore bundles attached to a fetched digest (OCI
// referrers, or oras-go's referrers tag schema, then cosign's
// sha256-<hex>.sig/.att tags when they carry a bundle layer), bounded in
// number and size, and reports legacy cosign signatures it skipped; it does
// not verify them (package sigverify does).
//
// Push publishes a core module in the CNCF Wasm OCI artifact layout (what
// `warden publish` does), and AttachBundle attaches a Sigstore bundle to a
// pushed manifest as an OCI referrer, where Bundles finds it.
package oci
