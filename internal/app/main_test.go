package app

import (
	"fmt"
	"os"
	"testing"

	"github.com/warden-run/warden/internal/pgtest"
)

// pg is the PostgreSQL server of this test binary, for the tests that run
// on the memory store's PostgreSQL backend.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	var err error
	if pg, err = pgtest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}
