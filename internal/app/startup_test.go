package app

import (
	"context"
	"fmt"
	"testing"
)

// TestStartupLoaded: StartupLoaded (what /healthz?ready waits for) is
// false from the start of the first load of the tools dir until its last
// module was tried, including while a failed module's error is reported;
// true before, after, and through later loads; and true at once for an
// empty tools dir.
func TestStartupLoaded(t *testing.T) {
	w := newLazyWorld(t, nil)
	w.put(t, "broken", []byte("not wasm"))
	a, _ := startApp(t, w.dir, w.config(""), nil)
	if !a.catalog.StartupLoaded() {
		t.Fatal("StartupLoaded false before any load")
	}
	var during []string
	a.Catalog().LoadToolsInBackground(context.Background(), func(error) {
		during = append(during, fmt.Sprint(a.catalog.StartupLoaded(), a.catalog.Loading()))
	})
	a.catalog.Wait()
	if fmt.Sprint(during) != "[false [broken]]" || !a.catalog.StartupLoaded() {
		t.Fatalf("while the start's load reported: %v; after: %v", during, a.catalog.StartupLoaded())
	}
	during = nil
	a.Catalog().LoadToolsInBackground(context.Background(), func(error) {
		during = append(during, fmt.Sprint(a.catalog.StartupLoaded(), a.catalog.Loading()))
	})
	a.catalog.Wait()
	if fmt.Sprint(during) != "[true [broken]]" {
		t.Fatalf("a later load: %v, want the start's load still ended", during)
	}

	empty := newLazyWorld(t, nil)
	b, _ := startApp(t, empty.dir, empty.config(""), nil)
	b.Catalog().LoadToolsInBackground(context.Background(), func(err error) { t.Error(err) })
	if !b.catalog.StartupLoaded() {
		t.Fatal("StartupLoaded false after the load of an empty tools dir began")
	}
}
