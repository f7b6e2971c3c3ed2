package app

import (
	"os"
	"testing"

	"github.com/warden-run/warden/internal/pgtest"
)

// pg is the PostgreSQL server of this test binary, for the tests that run
// on the memory store's PostgreSQL backend.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New() // started by the first test that asks for a database
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}
