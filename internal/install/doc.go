// Package install gets modules onto disk and approves them: it reviews a
// module before it is installed (ReviewInstall, ReviewFetched), installs
// what was reviewed (Install: the file, its pin, its source, its grant
// bindings), fetches modules from OCI registries and https:// URLs under the
// signature policy (Fetch), makes the tools dir hold what config.yaml locks
// (Sync), compares an installed module with what its source offers now
// (ReviewUpdate), and inspects a module before it is published (Inspect).
//
// An Installer serves no tool and loads nothing into the catalog of a
// running warden: it loads a module in the sandbox only to describe it,
// writes the tools dir and the config file, and has the config reloaded. A
// serving warden picks the result up through its tools-dir and config
// watchers; cmd/warden's install, sync, update and publish commands drive
// it, and internal/app constructs one from its parts (App.Installer).
package install
