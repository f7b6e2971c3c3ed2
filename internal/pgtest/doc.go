// Package pgtest runs a throwaway PostgreSQL server for tests: initdb in a
// temp directory, postgres on a free loopback port (and a unix socket in the
// same directory), stopped at the end, and killed by the kernel should the
// test binary die first. One server serves a whole test binary (New in
// TestMain, Stop after m.Run); it starts when a first test asks for a
// database, and each test takes a fresh database of its own.
//
// It finds initdb and postgres under /usr/lib/postgresql/*/bin (Debian's
// postgresql package) or on PATH. PostgreSQL refuses to run as root, so as
// root the server runs as the unprivileged user "nobody" (present on every
// Debian and most other systems), through the exec package's credential
// switch: no sudo, runuser or setpriv is needed, and no user is created.
//
// When PostgreSQL is missing, tests skip with a message naming the package
// to install, except when the environment variable CI is set: then they
// fail, so that CI cannot pass by testing nothing.
//
// The server runs on Linux only: it relies on Linux's parent-death signal
// (Pdeathsig) to take postgres down with a dying test binary, and on flock
// and Debian's layout to find and sweep its servers. On other systems DB
// skips every test that asks for a database, saying so, CI or not.
package pgtest
