package schedule

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
)

var testRoles = map[string]string{"1": "state", "2": "audit", "3": "request", "9": "joblog"}

// fakeProcess sends its writes one after the other through its gate, each after the
// previous one was answered, as a FlowNet process does; kinds name the writes.
func fakeProcess(ctx context.Context, wg *sync.WaitGroup, s *Scheduler, name string, kinds ...string) {
	g := s.Gate(name)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer s.Exited(name)
		for _, k := range kinds {
			done, err := g.Begin(ctx, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "1", RecordKey: k + ":x"})
			if err != nil {
				return
			}
			done(200)
		}
	}()
}

// runFake runs processes (name → write kinds) under one scheduler with chooser c.
func runFake(t *testing.T, c Chooser, procs [][]string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for _, p := range procs {
		names = append(names, p[0])
	}
	s := New(Config{Roles: testRoles, Chooser: c, Expect: names, Window: 200 * time.Millisecond, Limit: 20 * time.Second})
	var wg sync.WaitGroup
	for _, p := range procs {
		fakeProcess(ctx, &wg, s, p[0], p[1:]...)
	}
	s.Start(ctx)
	wg.Wait()
	r := s.Stop()
	s.Wait()
	require.NoError(t, ctx.Err(), "the fake scenario did not finish")
	return r
}

func orderOf(r Result) string { return Order(r.Schedule()) }

func TestQuiescenceWaitsForInFlightAndRecentTrafficButNotForHeldOrExited(t *testing.T) {
	s := New(Config{Roles: testRoles, Window: time.Second})
	now := time.Now()
	s.procs = map[string]*procState{"A": {held: 1, last: now}}
	s.held = []*heldWrite{{process: "A"}}
	q, _ := s.quiescentLocked(now)
	assert.True(t, q, "the only process has a write held")

	s.procs["B"] = &procState{inflight: 1, last: now.Add(-time.Hour)}
	q, until := s.quiescentLocked(now)
	assert.False(t, q, "B has a read in flight")
	assert.True(t, until.IsZero(), "only B's answer can change that")

	s.procs["B"] = &procState{last: now.Add(-300 * time.Millisecond)}
	q, until = s.quiescentLocked(now)
	assert.False(t, q, "B sent something within the window")
	assert.Equal(t, now.Add(700*time.Millisecond), until, "quiet once the window has passed")
	q, _ = s.quiescentLocked(now.Add(700 * time.Millisecond))
	assert.True(t, q)

	s.cfg.Expect = []string{"A", "D"}
	q, _ = s.quiescentLocked(now.Add(700 * time.Millisecond))
	assert.False(t, q, "D is expected and has not started")
	s.cfg.Expect = nil

	s.procs["C"] = &procState{exited: true, last: now}
	q, _ = s.quiescentLocked(now.Add(700 * time.Millisecond))
	assert.True(t, q, "an exited process does not hold the schedule up")

	s.held = nil
	q, _ = s.quiescentLocked(now.Add(time.Hour))
	assert.False(t, q, "nothing held: nothing to release")
}

func TestReadsAndUnscheduledAppsPassAndOnlyOneWriteIsOutAtATime(t *testing.T) {
	ctx := context.Background()
	s := New(Config{Roles: testRoles, Chooser: Replay(nil), Window: 50 * time.Millisecond, Limit: 20 * time.Second})
	g := s.Gate("A")
	done, err := g.Begin(ctx, faultproxy.GateRequest{Method: "GET", Path: "/k/v1/records.json", App: "1"})
	require.NoError(t, err, "a read is never held")
	done(200)
	done, err = g.Begin(ctx, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "9"})
	require.NoError(t, err, "a write to an app that is not scheduled passes")
	done(200)

	// Two writes held; the loop releases one and only after its answer the other.
	var mu sync.Mutex
	var events []string
	var wg sync.WaitGroup
	for _, kind := range []string{"INV", "LOCK"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Gate("P-"+kind).Begin(ctx, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "2", RecordKey: kind + ":1"})
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			events = append(events, "out "+kind)
			mu.Unlock()
			mu.Lock()
			events = append(events, "answered "+kind)
			mu.Unlock()
			d(201)
		}()
	}
	s.Start(ctx)
	wg.Wait()
	r := s.Stop()
	s.Wait()
	require.Len(t, r.Steps, 2)
	assert.Equal(t, []string{"out INV", "answered INV", "out LOCK", "answered LOCK"}, events, "sorted by signature, one at a time")
	assert.Equal(t, 201, r.Steps[0].Status)
	assert.Len(t, r.Writes, 2, "the history holds the scheduled writes only")
}

func TestSameSeedSameSchedules(t *testing.T) {
	procs := [][]string{{"A", "LOCK", "RUN", "LOCKDONE"}, {"B", "LOCK", "RUN", "LOCKDONE"}}
	plan := func(seed uint64, n int) string {
		st, err := NewStrategy("random", seed, 0, 0)
		require.NoError(t, err)
		c, _ := st.Plan(n)
		return orderOf(runFake(t, c, procs))
	}
	seen := map[string]bool{}
	for n := range 8 {
		first := plan(1, n)
		assert.Equal(t, first, plan(1, n), "schedule %d of seed 1 again", n)
		seen[first] = true
	}
	assert.Greater(t, len(seen), 1, "eight schedules of one seed are not all the same order")
}

// The random chooser's pick between two writes depends on their signatures and the
// schedule's history only: a third write held beside them can win, but it cannot turn the
// choice from one of them to the other, and the order of arrival plays no part.
func TestRandomChoiceDependsOnSignaturesNotOnWhatElseIsHeld(t *testing.T) {
	x := Candidate{Sig: Signature{Process: "A", Method: "POST", Role: "state", Kind: "LOCK"}}
	y := Candidate{Sig: Signature{Process: "B", Method: "POST", Role: "state", Kind: "LOCK"}}
	z := Candidate{Sig: Signature{Process: "B", Method: "PUT", Role: "request", By: "id", Fields: []string{"claim_heartbeat_at"}}}
	st, err := NewStrategy("random", 11, 0, 0)
	require.NoError(t, err)
	picks := map[string]int{}
	for n := range 64 {
		two, _ := st.Plan(n)
		three, _ := st.Plan(n)
		got := []Candidate{x, y}[two.Choose(0, []Candidate{x, y}, "", false)]
		with := []Candidate{x, y, z}[three.Choose(0, []Candidate{x, y, z}, "", false)]
		if with.Sig.String() != z.Sig.String() {
			assert.Equal(t, got.Sig.String(), with.Sig.String(), "schedule %d: a third held write flipped the choice", n)
		}
		picks[got.Sig.Process]++
	}
	assert.Len(t, picks, 2, "both writes are chosen in some schedules: %v", picks)
}

// A random schedule keeps a process going for a stretch with the probability it drew:
// some schedules run one process's whole sequence before the other's first write (what
// took p2-11-03's second poller past the first one's release), others interleave.
func TestRandomSchedulesIncludeLongStretchesAndInterleavings(t *testing.T) {
	var a, b []string
	for range 12 {
		a = append(a, "W")
		b = append(b, "W")
	}
	procs := [][]string{append([]string{"A"}, a...), append([]string{"B"}, b...)}
	st, err := NewStrategy("random", 1, 0, 0)
	require.NoError(t, err)
	serial, interleaved := 0, 0
	for n := range 24 {
		c, _ := st.Plan(n)
		r := runFake(t, c, procs)
		switches := 0
		for i := 1; i < len(r.Steps); i++ {
			if r.Steps[i].Sig.Process != r.Steps[i-1].Sig.Process {
				switches++
			}
		}
		switch {
		case switches == 1:
			serial++
		case switches > 4:
			interleaved++
		}
	}
	assert.Positive(t, serial, "a schedule that ran one process's 12 writes before the other's")
	assert.Positive(t, interleaved, "a schedule that switched more than four times")
}

func TestReplayRunsTheScheduleBySignature(t *testing.T) {
	procs := [][]string{{"A", "LOCK", "RUN"}, {"B", "LOCK", "RUN"}, {"C", "INV"}}
	st, _ := NewStrategy("random", 7, 0, 0)
	c, _ := st.Plan(3)
	want := runFake(t, c, procs)
	// Start the processes in another order: arrivals differ, signatures decide.
	got := runFake(t, Replay(want.Schedule()), [][]string{procs[2], procs[1], procs[0]})
	assert.Equal(t, orderOf(want), orderOf(got))
	for _, s := range got.Steps {
		assert.False(t, s.Diverged, "every write the replay named came")
	}
}

func TestReplayOfAWriteThatNeverComesDivergesAfterItsPatience(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := New(Config{Roles: testRoles, Chooser: Replay([]Signature{{Process: "Z", Method: "POST", Role: "state", Kind: "LOCK"}}),
		Window: 20 * time.Millisecond, Limit: time.Minute, Patience: 100 * time.Millisecond})
	var wg sync.WaitGroup
	fakeProcess(ctx, &wg, s, "A", "LOCK")
	s.Start(ctx)
	wg.Wait()
	r := s.Stop()
	s.Wait()
	require.Len(t, r.Steps, 1)
	assert.True(t, r.Steps[0].Diverged)
	assert.Equal(t, 1, r.Forced)
}

// explore runs a strategy to exhaustion (or max schedules) on the fake scenario.
func explore(t *testing.T, st Strategy, procs [][]string, maxSchedules int) map[string]int {
	orders := map[string]int{}
	for n := 0; n < maxSchedules; n++ {
		c, wait := st.Plan(n)
		require.False(t, wait, "nothing runs concurrently here")
		if c == nil {
			break
		}
		r := runFake(t, c, procs)
		st.Executed(n, r)
		orders[orderOf(r)]++
	}
	return orders
}

func TestDFSIsExhaustiveUpToItsPreemptionBound(t *testing.T) {
	procs := [][]string{{"A", "LOCK", "RUN"}, {"B", "LOCK", "RUN"}}
	// Of the six interleavings of two writes each, AABB and BBAA have no preemption;
	// ABBA and BAAB one; ABAB and BABA two.
	for bound, want := range []int{2, 4, 6} {
		st, err := NewStrategy("dfs", 0, 0, bound)
		require.NoError(t, err)
		orders := explore(t, st, procs, 20)
		assert.Len(t, orders, want, "bound %d", bound)
		for o, n := range orders {
			assert.Equal(t, 1, n, "bound %d: order run twice:\n%s", bound, o)
		}
		c, _ := st.Plan(99)
		assert.Nil(t, c, "bound %d: exhausted", bound)
	}
}

func TestPCTLowersTheRunningProcessAtItsChangePoint(t *testing.T) {
	c := &pctChooser{rng: rngFor(3, 0), depth: 2, prio: map[string]float64{}, change: map[int]int{2: 1}}
	cands := []Candidate{{Sig: Signature{Process: "A"}}, {Sig: Signature{Process: "B"}}}
	var got []string
	for step := range 5 {
		got = append(got, cands[c.Choose(step, cands, "", false)].Sig.Process)
	}
	first := got[0]
	other := map[string]string{"A": "B", "B": "A"}[first]
	assert.Equal(t, []string{first, first, other, other, other}, got, "the highest priority runs until the change point at step 2")
	assert.Equal(t, 1.0, c.prio[first], "lowered to the change point's priority")
	assert.Greater(t, c.prio[other], 2.0, "initial priorities are above the depth")

	st, err := NewStrategy("pct", 5, 3, 0)
	require.NoError(t, err)
	pc, _ := st.Plan(0)
	assert.Len(t, pc.(*pctChooser).change, 2, "depth 3: two change points")
	_, err = NewStrategy("pct", 5, 0, 0)
	assert.Error(t, err)
}

// A released write is in flight until its answer, like any request: once answered, a
// process's count of requests in flight is back to what it was, so a read of it in flight
// afterwards keeps it busy (a released write once left the count one short for good, and
// a node's long business read then looked like an idle process).
func TestReleasedWritesAreInFlightUntilAnswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := New(Config{Roles: testRoles, Chooser: Replay(nil), Window: 20 * time.Millisecond, Limit: 20 * time.Second})
	g := s.Gate("A")
	s.Start(ctx)
	inflight := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.procs["A"].inflight
	}
	for _, k := range []string{"LOCK", "RUN"} {
		done, err := g.Begin(ctx, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "1", RecordKey: k + ":x"})
		require.NoError(t, err)
		assert.Equal(t, 1, inflight(), "%s released, not answered yet", k)
		done(200)
		assert.Equal(t, 0, inflight(), "%s answered", k)
	}
	readDone, err := g.Begin(ctx, faultproxy.GateRequest{Method: "GET", Path: "/k/v1/records.json", App: "1"})
	require.NoError(t, err)
	assert.Equal(t, 1, inflight(), "a read in flight after two answered writes")
	s.mu.Lock()
	s.held = append(s.held, &heldWrite{process: "B"})
	s.procs["B"] = &procState{held: 1}
	quiet, _ := s.quiescentLocked(time.Now().Add(time.Hour))
	s.held, s.procs["B"] = nil, &procState{exited: true}
	s.mu.Unlock()
	assert.False(t, quiet, "A's read in flight holds B's write back however long it takes")
	readDone(200)
	r := s.Stop()
	s.Wait()
	assert.Len(t, r.Steps, 2)
}

// Heartbeats are never held (their moment is the process's clock), but the checkers still
// see them; and an expected process that has not sent its first request is still starting.
func TestHeartbeatsPassAndAStartingProcessIsNotQuiet(t *testing.T) {
	ctx := context.Background()
	s := New(Config{Roles: testRoles, Chooser: Replay(nil), Expect: []string{"A", "B"}, Window: time.Millisecond, Limit: 20 * time.Second})
	g := s.Gate("A")
	for _, r := range []faultproxy.GateRequest{
		{Method: "PUT", Path: "/k/v1/record.json", App: "3", RecordID: "7", Revision: "4", Fields: []string{"claim_heartbeat_at"}},
		{Method: "PUT", Path: "/k/v1/record.json", App: "1", UpdateKey: "record_key", RecordKey: "LOCK:n", Revision: "2", Heartbeat: true, Fields: []string{"heartbeat_at", "lease_expires_at"}},
	} {
		done, err := g.Begin(ctx, r) // no loop runs: a held write would block here for good
		require.NoError(t, err, "a heartbeat passes")
		done(200)
	}
	s.mu.Lock()
	require.Len(t, s.writes, 2, "both heartbeats are in the history")
	assert.Equal(t, "4", s.writes[0].Revision)
	assert.Equal(t, 200, s.writes[1].Status)
	assert.Empty(t, s.held)
	s.mu.Unlock()

	s.Gate("B")
	s.mu.Lock()
	s.held = append(s.held, &heldWrite{process: "A"})
	s.procs["A"].held = 1
	quiet, _ := s.quiescentLocked(time.Now().Add(time.Hour))
	assert.False(t, quiet, "B has its gate but sent nothing yet")
	s.procs["B"].sent = true
	quiet, _ = s.quiescentLocked(time.Now().Add(time.Hour))
	assert.True(t, quiet, "B sent its first request and has been quiet since")
	s.mu.Unlock()
}
