package runtime

import (
	"context"
	"testing"
)

// TestEvictedRoomGoesToTheEvictor: the room an eviction frees goes to the
// call that evicted for it, even when a spare asks for room at the moment
// the victim's memory is freed (while the evictor has dropped the
// budget's lock): the spare is refused and no second session is evicted.
func TestEvictedRoomGoesToTheEvictor(t *testing.T) {
	const page = 64 << 10
	ctx := context.Background()
	b := newBudget(2 * page)
	parked := make([]*memAccount, 2)
	for i := range parked {
		a, err := b.open(ctx, page, false)
		if err != nil {
			t.Fatal(err)
		}
		if !a.park(acctParked) {
			t.Fatal("cannot park")
		}
		parked[i] = a
	}
	var spareErr error
	var spareTried bool
	b.evict = func(victim *memAccount) {
		victim.close() // the victim's memory is freed here...
		// ...and a spare made in the background asks for room now.
		spare, err := b.open(ctx, page, true)
		spareTried, spareErr = true, err
		if err == nil {
			spare.close()
		}
	}
	call, err := b.open(ctx, page, false)
	if err != nil {
		t.Fatal(err)
	}
	if !spareTried || spareErr == nil {
		t.Fatalf("the spare was given the room the call evicted for (tried %v, err %v)", spareTried, spareErr)
	}
	if s := b.stats(); s.Evictions != 1 || s.Used != 2*page {
		t.Fatalf("after the call's eviction: %+v, want 1 eviction and %d bytes used", s, 2*page)
	}
	if parked[0].state != acctGone || parked[1].state != acctParked {
		t.Fatalf("the least recently used session's instance should be the only one gone: %v %v", parked[0].state, parked[1].state)
	}
	call.close()
	parked[1].close()
	if s := b.stats(); s.Used != 0 {
		t.Fatalf("everything closed, %d bytes still used", s.Used)
	}
}
