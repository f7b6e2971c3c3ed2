package guest

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-run/warden/internal/testwasm"
)

// countingAccount records what an instance's memory is charged and freed.
type countingAccount struct {
	mu            sync.Mutex
	forced, freed uint64
	frees         int
}

func (a *countingAccount) Force(n uint64) { a.mu.Lock(); a.forced += n; a.mu.Unlock() }
func (a *countingAccount) Grow(uint64) bool {
	return true
}
func (a *countingAccount) Free(n uint64) { a.mu.Lock(); a.freed += n; a.frees++; a.mu.Unlock() }

// engineCloser is what wazero's interpreter uses to stop a call whose
// context ends (WithCloseOnContextDone): a goroutine that marks the module
// closed and leaves releasing its resources to its next call.
type engineCloser interface {
	CloseModuleOnCanceledOrTimeout(ctx context.Context) context.CancelFunc
}

// TestCloseFreesMemoryAfterEngineClosed: the interpreter's own close of a
// module whose call context ended lands after the call's last check (the
// race of WithCloseOnContextDone, injected here at that exact point by
// running wazero's closer on a context already cancelled and waiting for
// it to mark the module closed). Instance.Close then still frees the
// memory, once, instead of leaving it to a garbage collection; and the
// usual path, where wazero frees it, frees it once too.
func TestCloseFreesMemoryAfterEngineClosed(t *testing.T) {
	ctx := context.Background()
	wasm := testwasm.WATString(t, `(module (memory (export "memory") 2) (func (export "f")))`)
	wz := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true))
	defer wz.Close(ctx)
	compiled, err := wz.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	instance := func() (*Instance, *countingAccount) {
		acct := &countingAccount{}
		in, config := NewShell(WithAccount(ctx, acct), "digest", Limits{Memory: 1 << 20, CaptureBytes: 1024})
		mod, err := wz.InstantiateModule(experimental.WithMemoryAllocator(ctx, in.Memory), compiled, config.WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		in.Mod = mod
		if acct.forced != 2<<16 {
			t.Fatalf("instance charged %d bytes, want its 2 pages", acct.forced)
		}
		return in, acct
	}

	for _, race := range []bool{true, false} {
		in, acct := instance()
		if race {
			closer, ok := in.Mod.(engineCloser)
			if !ok {
				t.Fatalf("wazero's module %T has no CloseModuleOnCanceledOrTimeout: the race this test injects changed shape; check guest.Instance.Close against wazero's interpreter", in.Mod)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			stop := closer.CloseModuleOnCanceledOrTimeout(cancelled)
			// Its goroutine marks the module closed; nothing else does.
			for !in.Mod.IsClosed() {
				goruntime.Gosched()
			}
			stop()
			if acct.frees != 0 {
				t.Fatalf("the engine's close freed the memory itself (%d frees): the race is not the one injected", acct.frees)
			}
		}
		in.Close(ctx)
		if acct.frees != 1 || acct.freed != 2<<16 {
			t.Fatalf("race=%v: memory freed %d times, %d bytes; want once, %d bytes", race, acct.frees, acct.freed, 2<<16)
		}
		if in.Memory.Size() != 0 {
			t.Fatalf("race=%v: the memory still holds %d bytes after Close", race, in.Memory.Size())
		}
		in.Close(ctx) // again: nothing more is freed
		if acct.frees != 1 {
			t.Fatalf("race=%v: a second Close freed again (%d frees)", race, acct.frees)
		}
	}
}
