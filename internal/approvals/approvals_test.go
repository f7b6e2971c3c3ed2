package approvals

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/pgtest"
)

// pg is this test binary's PostgreSQL server (started by the first test
// that asks for a database).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New()
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// asked is an Ask running in the background.
type asked struct {
	d   Decision
	err error
	end chan struct{}
}

func ask(b Broker, r Request) *asked {
	return askCtx(context.Background(), b, r)
}

// askCtx is ask under ctx.
func askCtx(ctx context.Context, b Broker, r Request) *asked {
	a := &asked{end: make(chan struct{})}
	go func() {
		defer close(a.end)
		a.d, a.err = b.Ask(ctx, r)
	}()
	return a
}

// waitPending waits, on b's change notifications (no timer), until b
// lists n questions, and returns them. Each wake re-reads the list, so a
// notification coalesced with another loses nothing. The Asks the
// questions come from are passed as asks: one that ends first (refused,
// failed, a timeout on a busy machine) fails the test at once, where a
// wait for its question would never end.
func waitPending(t *testing.T, b Broker, changes <-chan struct{}, n int, asks ...*asked) []Request {
	t.Helper()
	ended := firstEnd(asks)
	for {
		p, err := b.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == n {
			return p
		}
		select {
		case <-changes:
		case a := <-ended:
			t.Fatalf("waiting for %d questions (%d listed), an Ask ended: %+v, %v", n, len(p), a.d, a.err)
		}
	}
}

// firstEnd returns a channel that receives the first of asks to end (and
// nothing when asks is empty). Its goroutines end with the Asks.
func firstEnd(asks []*asked) <-chan *asked {
	ended := make(chan *asked, len(asks))
	for _, a := range asks {
		go func() {
			<-a.end
			ended <- a
		}()
	}
	return ended
}

func question(tool string) Request {
	return Request{Kind: Gate, Tool: tool, Question: "run " + tool + "?", Principal: "alice", Deadline: time.Now().Add(time.Hour)}
}

// brokers runs f on each Broker: the one-process Memory, and two
// PostgreSQL brokers on one database (a and b: replicas).
func brokers(t *testing.T, max int, f func(t *testing.T, a, b Broker)) {
	t.Run("memory", func(t *testing.T) {
		m := NewMemory(max)
		f(t, m, m)
	})
	t.Run("postgres", func(t *testing.T) {
		url := pg.DB(t)
		a, b := openPG(t, url, max), openPG(t, url, max)
		f(t, a, b)
	})
}

func openPG(t *testing.T, url string, max int) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), PostgresOptions{URL: url, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestDecideReleasesAsk: a question asked on one replica is listed on the
// other, and a decision there releases the waiting Ask with it; the
// question is gone afterwards, and a second Decide finds nothing.
func TestDecideReleasesAsk(t *testing.T) {
	brokers(t, 0, func(t *testing.T, a, b Broker) {
		changes, cancel := b.Subscribe()
		defer cancel()
		w := ask(a, question("deploy"))
		p := waitPending(t, b, changes, 1, w)
		if p[0].Tool != "deploy" || p[0].Principal != "alice" || p[0].ID == "" {
			t.Fatalf("pending: %+v", p)
		}
		if err := b.Decide(context.Background(), p[0].ID, Decision{Approved: true, By: "bob", Persist: true}, nil); err != nil {
			t.Fatal(err)
		}
		<-w.end
		if w.err != nil || !w.d.Approved || w.d.By != "bob" || !w.d.Persist {
			t.Fatalf("Ask: %+v, %v", w.d, w.err)
		}
		if err := b.Decide(context.Background(), p[0].ID, Decision{Approved: false, By: "bob"}, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Decide: %v", err)
		}
		waitPending(t, b, changes, 0)
	})
}

// TestApproversFollowGroups: a question naming approvers is answered only
// by a named subject or a member of a named group.
func TestApproversFollowGroups(t *testing.T) {
	brokers(t, 0, func(t *testing.T, a, b Broker) {
		changes, cancel := b.Subscribe()
		defer cancel()
		r := question("deploy")
		r.Approvers = []string{"ops", "carol"}
		w := ask(a, r)
		id := waitPending(t, b, changes, 1, w)[0].ID
		if err := b.Decide(context.Background(), id, Decision{Approved: true, By: "mallory"}, []string{"dev"}); !errors.Is(err, ErrNotYours) {
			t.Fatalf("outsider: %v", err)
		}
		if err := b.Decide(context.Background(), id, Decision{Approved: false, By: "dave"}, []string{"dev", "ops"}); err != nil {
			t.Fatalf("member of ops: %v", err)
		}
		<-w.end
		if w.err != nil || w.d.Approved || w.d.By != "dave" {
			t.Fatalf("Ask: %+v, %v", w.d, w.err)
		}
	})
}

// TestBounded: with max questions waiting (on any replica), the next is
// refused with ErrTooMany at once.
func TestBounded(t *testing.T) {
	brokers(t, 2, func(t *testing.T, a, b Broker) {
		changes, cancel := b.Subscribe()
		defer cancel()
		w1, w2 := ask(a, question("one")), ask(b, question("two"))
		p := waitPending(t, b, changes, 2, w1, w2)
		if _, err := a.Ask(context.Background(), question("three")); !errors.Is(err, ErrTooMany) {
			t.Fatalf("third: %v", err)
		}
		for _, r := range p {
			if err := b.Decide(context.Background(), r.ID, Decision{By: "bob"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		<-w1.end
		<-w2.end
	})
}

// TestExpired: a question whose deadline passed ends with ErrExpired and
// is gone; deciding it then finds nothing.
func TestExpired(t *testing.T) {
	brokers(t, 0, func(t *testing.T, a, b Broker) {
		r := question("late")
		r.ID = "late-1"
		r.Deadline = time.Now().Add(-time.Second)
		if _, err := a.Ask(context.Background(), r); !errors.Is(err, ErrExpired) {
			t.Fatalf("Ask: %v", err)
		}
		if err := b.Decide(context.Background(), r.ID, Decision{Approved: true, By: "bob"}, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Decide after expiry: %v", err)
		}
		if p, err := b.Pending(context.Background()); err != nil || len(p) != 0 {
			t.Fatalf("pending: %v %v", p, err)
		}
	})
}

// TestCancelled: the call's end ends its Ask and removes the question.
func TestCancelled(t *testing.T) {
	brokers(t, 0, func(t *testing.T, a, b Broker) {
		changes, cancel := b.Subscribe()
		defer cancel()
		ctx, stop := context.WithCancel(context.Background())
		w := askCtx(ctx, a, question("x"))
		waitPending(t, b, changes, 1, w)
		stop()
		<-w.end
		if !errors.Is(w.err, context.Canceled) {
			t.Fatalf("Ask: %v", w.err)
		}
		waitPending(t, b, changes, 0)
	})
}

// TestCancelledAsTheInsertCommits: a call that ends while its question's
// insert commits (the fault injected just after the commit, as when the
// commit's answer is lost to the cancel) leaves no row behind: without
// the cleanup the question stayed listed in every console until its
// deadline, with nobody waiting on it (TestCancelled hung on it, rarely).
func TestCancelledAsTheInsertCommits(t *testing.T) {
	url := pg.DB(t)
	a, b := openPG(t, url, 0), openPG(t, url, 0)
	ctx, stop := context.WithCancel(context.Background())
	a.commitFault = func() error {
		stop()
		return ctx.Err()
	}
	if _, err := a.Ask(ctx, question("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask: %v", err)
	}
	if p, err := b.Pending(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("pending after the Ask ended: %+v %v", p, err)
	}
}

// TestInsertFailureDeletesOnlyAfterCommit: an insert that fails before its
// commit (the call already ended, the database unreachable) stored no
// row, and its Ask returns without a delete, which would only delay the
// refusal (or the fallback) by another query timeout; one whose commit was
// attempted deletes the row it may have stored, once. The deletes are
// counted at the fault hook, not timed.
func TestInsertFailureDeletesOnlyAfterCommit(t *testing.T) {
	url := pg.DB(t)
	px := pgtest.NewProxy(t, url)
	a, err := OpenPostgres(context.Background(), PostgresOptions{URL: px.URL, QueryTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	deletes := 0
	a.finishFault = func() error { deletes++; return nil }

	ended, stop := context.WithCancel(context.Background())
	stop()
	if _, err := a.Ask(ended, question("x")); !errors.Is(err, context.Canceled) || deletes != 0 {
		t.Fatalf("the call ended before the insert: %v, %d deletes, want none", err, deletes)
	}

	b := openPG(t, url, 0)
	b.finishFault = func() error { deletes++; return nil }
	b.commitFault = func() error { return errors.New("the commit's answer was lost") }
	local := &localAsks{Broker: NewMemory(0)}
	f := &Fallback{Shared: b, Local: local, UseLocal: func() bool { return true }}
	// The delete ran, so the question is nowhere else: the Fallback may
	// ask it here.
	if _, err := f.Ask(context.Background(), question("x")); !errors.Is(err, errAskedLocally) || deletes != 1 || local.n != 1 {
		t.Fatalf("the commit's answer lost: %v, %d deletes, %d local asks; want 1 delete, then the local ask", err, deletes, local.n)
	}

	px.Stop()
	if _, err := a.Ask(context.Background(), question("x")); !errors.Is(err, ErrUnavailable) || deletes != 1 {
		t.Fatalf("the database unreachable: %v, %d deletes in all, want still 1", err, deletes)
	}
}

// TestCommitLostAndDeleteFailed: when the commit's answer is lost and the
// delete that would remove the row fails too, the row may be stored,
// listed and decided on another replica: the Ask fails closed, marked
// asked, so that a Fallback does not ask the same question locally (where
// an approval could overturn a denial taken there).
func TestCommitLostAndDeleteFailed(t *testing.T) {
	url := pg.DB(t)
	a, b := openPG(t, url, 0), openPG(t, url, 0)
	a.commitFault = func() error { return errors.New("the commit's answer was lost") }
	a.finishFault = func() error { return errors.New("injected delete failure") }
	local := &localAsks{Broker: NewMemory(0)}
	f := &Fallback{Shared: a, Local: local, UseLocal: func() bool { return true }}
	_, err := f.Ask(context.Background(), question("deploy"))
	var asked askedError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &asked) || !strings.Contains(err.Error(), "the commit's answer was lost") || local.n != 0 {
		t.Fatalf("Ask: %v (local asks: %d), want ErrUnavailable marked asked, and no local ask", err, local.n)
	}
	// Why: the row committed, and the other replica lists it.
	if p, err := b.Pending(context.Background()); err != nil || len(p) != 1 {
		t.Fatalf("pending on the other replica: %+v %v, want the stored question", p, err)
	}
}

// TestMemoryDecisionRacingDeadline: a Decide that succeeded is what Ask
// returns, even when the deadline passed meanwhile.
func TestMemoryDecisionRacingDeadline(t *testing.T) {
	m := NewMemory(0)
	w := &waiter{req: Request{ID: "q"}, ch: make(chan Decision, 1)}
	m.waiting["q"] = w
	if err := m.Decide(context.Background(), "q", Decision{Approved: true, By: "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := m.late(w, ErrExpired); err != nil || !d.Approved {
		t.Fatalf("late after Decide: %+v %v", d, err)
	}
	w2 := &waiter{req: Request{ID: "r"}, ch: make(chan Decision, 1)}
	m.waiting["r"] = w2
	if _, err := m.late(w2, ErrExpired); !errors.Is(err, ErrExpired) {
		t.Fatalf("late without Decide: %v", err)
	}
	if err := m.Decide(context.Background(), "r", Decision{By: "bob"}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Decide after late: %v", err)
	}
}

// TestPostgresFailsClosed: with the database unreachable (the connection
// cut and the port closed, by a proxy in front of a real server), a
// waiting Ask ends with ErrUnavailable naming the database, never with an
// approval, and a new Ask is refused the same way.
func TestPostgresFailsClosed(t *testing.T) {
	url := pg.DB(t)
	px := pgtest.NewProxy(t, url)
	// The query timeout is a bound the test never waits for (the cut and
	// the closed port fail at once): it is long, so that a busy machine's
	// slow insert does not end the Ask before the database goes.
	b, err := OpenPostgres(context.Background(), PostgresOptions{URL: px.URL, Poll: 50 * time.Millisecond, QueryTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	direct := openPG(t, url, 0)
	changes, cancel := direct.Subscribe()
	defer cancel()
	w := ask(b, question("deploy"))
	waitPending(t, direct, changes, 1, w)
	px.Stop()
	<-w.end
	if !errors.Is(w.err, ErrUnavailable) || w.d.Approved || !strings.Contains(w.err.Error(), "postgres://postgres@127.0.0.1:") {
		t.Fatalf("waiting Ask with the database gone: %+v, %v", w.d, w.err)
	}
	d, err := b.Ask(context.Background(), question("deploy"))
	if !errors.Is(err, ErrUnavailable) || d.Approved {
		t.Fatalf("new Ask with the database gone: %+v, %v", d, err)
	}
}

// TestFallback: with on_backend_error: local, a question the shared
// backend cannot take waits locally, is listed and decided there; without
// it, the failure refuses.
func TestFallback(t *testing.T) {
	url := pg.DB(t)
	px := pgtest.NewProxy(t, url)
	shared, err := OpenPostgres(context.Background(), PostgresOptions{URL: px.URL, QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	px.Stop()
	useLocal := false
	f := &Fallback{Shared: shared, Local: NewMemory(0), UseLocal: func() bool { return useLocal }}
	if _, err := f.Ask(context.Background(), question("x")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("refuse: %v", err)
	}
	useLocal = true
	changes, cancel := f.Subscribe()
	defer cancel()
	w := ask(f, question("x"))
	ended := firstEnd([]*asked{w})
	var id string
	for id == "" {
		p, _ := f.Pending(context.Background()) // the shared half fails: the local half is listed
		if len(p) == 1 {
			id = p[0].ID
			break
		}
		select {
		case <-changes:
		case <-ended:
			t.Fatalf("the Ask ended before its question was listed: %+v, %v", w.d, w.err)
		}
	}
	if err := f.Decide(context.Background(), id, Decision{Approved: true, By: "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	<-w.end
	if w.err != nil || !w.d.Approved {
		t.Fatalf("local: %+v %v", w.d, w.err)
	}
}

// localAsks is a Local broker that counts the questions asked of it and
// refuses them at once.
type localAsks struct {
	Broker
	n int
}

var errAskedLocally = errors.New("asked on the local broker")

func (l *localAsks) Ask(context.Context, Request) (Decision, error) {
	l.n++
	return Decision{}, errAskedLocally
}

// TestPostgresReadFailureKeepsDecision: when reading the row fails after
// another replica decided (the fault injected at the read, after the
// decision is written), the decision the final delete finds is returned,
// not thrown away: a denial stays a denial, and a Fallback with
// on_backend_error: local never asks the question again locally.
func TestPostgresReadFailureKeepsDecision(t *testing.T) {
	url := pg.DB(t)
	a, b := openPG(t, url, 0), openPG(t, url, 0)
	r := question("deploy")
	r.ID = "q-read-fails"
	faults := 0
	a.readFault = func() error {
		faults++
		if faults == 1 {
			if err := b.Decide(context.Background(), r.ID, Decision{Approved: false, By: "bob"}, nil); err != nil {
				t.Errorf("Decide: %v", err)
			}
		}
		return errors.New("injected read failure")
	}
	local := &localAsks{Broker: NewMemory(0)}
	f := &Fallback{Shared: a, Local: local, UseLocal: func() bool { return true }}
	d, err := f.Ask(context.Background(), r)
	if err != nil || d.Approved || d.By != "bob" || local.n != 0 {
		t.Fatalf("Ask: %+v, %v (local asks: %d)", d, err, local.n)
	}
	if p, err := b.Pending(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("pending afterwards: %v %v", p, err)
	}
}

// TestFallbackNotAfterInsert: a shared question that was stored and then
// could not be read (no decision) refuses with ErrUnavailable: it is not
// asked again on the local broker, where a second answer could contradict
// one taken on another replica.
func TestFallbackNotAfterInsert(t *testing.T) {
	a := openPG(t, pg.DB(t), 0)
	a.readFault = func() error { return errors.New("injected read failure") }
	local := &localAsks{Broker: NewMemory(0)}
	f := &Fallback{Shared: a, Local: local, UseLocal: func() bool { return true }}
	d, err := f.Ask(context.Background(), question("deploy"))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "injected read failure") || d.Approved || local.n != 0 {
		t.Fatalf("Ask: %+v, %v (local asks: %d)", d, err, local.n)
	}
}

// TestBoundedPerPrincipal: one caller with its bound of questions waiting
// (on any replica) is refused the next with ErrTooManyOfCaller, while
// another caller still asks.
func TestBoundedPerPrincipal(t *testing.T) {
	ofCaller := func(tool, who string) Request { r := question(tool); r.Principal = who; return r }
	for _, c := range []struct {
		name string
		a, b Broker
	}{
		{"memory", func() Broker { m := NewMemory(0); m.MaxPerPrincipal = 2; return m }(), nil},
		{"postgres", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := c.a, c.a
			if a == nil {
				url := pg.DB(t)
				pa, err := OpenPostgres(context.Background(), PostgresOptions{URL: url, MaxPerPrincipal: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pa.Close)
				pb, err := OpenPostgres(context.Background(), PostgresOptions{URL: url, MaxPerPrincipal: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pb.Close)
				a, b = pa, pb
			}
			changes, cancel := b.Subscribe()
			defer cancel()
			w1, w2 := ask(a, ofCaller("one", "mallory")), ask(b, ofCaller("two", "mallory"))
			waitPending(t, b, changes, 2, w1, w2)
			// Its deadline already passed: refused for the bound before any
			// wait, else it would end at once with ErrExpired.
			third := ofCaller("three", "mallory")
			third.Deadline = time.Now().Add(-time.Second)
			if _, err := a.Ask(context.Background(), third); !errors.Is(err, ErrTooManyOfCaller) || errors.Is(err, ErrTooMany) {
				t.Fatalf("mallory's third: %v", err)
			}
			w3 := ask(a, ofCaller("four", "alice"))
			p := waitPending(t, b, changes, 3, w1, w2, w3)
			for _, r := range p {
				if err := b.Decide(context.Background(), r.ID, Decision{By: "bob"}, nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range []*asked{w1, w2, w3} {
				<-w.end
				if w.err != nil {
					t.Fatalf("a question within the bounds: %v", w.err)
				}
			}
		})
	}
}
