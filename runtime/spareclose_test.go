package runtime_test

import (
	"context"
	"testing"

	"github.com/warden-run/warden/runtime"
)

// TestCloseWaitsForSpares: a spare instance made in the background after a
// call is restored into memory that closing the Runtime frees, so Close
// waits for it (seen under -race before: Close freed a spare's memory
// while cowmem restored it). The test holds the spare at its start and
// lets it go only once Close is waiting for it; without the wait, Close
// returns with the spare still held and the test fails.
func TestCloseWaitsForSpares(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Options{CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	closeWaits, closed := make(chan struct{}), make(chan struct{})
	runtime.SetSpareHooks(rt, func(string) {
		close(started)
		<-release
	}, func() { close(closeWaits) })
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{})
	wantCount(t, sessionCall(t, tl, "a"), "1", false) // takes the load-time instance; a spare starts
	<-started
	go func() {
		rt.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closeWaits: // Close is blocked until the spare is done
	case <-closed:
		close(release)
		t.Fatal("Close returned while a spare was being made")
	}
	close(release)
	<-closed
}
