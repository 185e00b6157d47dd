package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// duplicateStarts is a fake of p2-11-03's race: two pollers each claim their request, try
// the network lock, and the one holding it creates the run and releases the lock; the
// other settles as LOCK_CONFLICT (lock held) or NOOP (run exists). With the defect, a lock
// POST that comes right after another poller's lock POST is granted too (two holders).
type duplicateStarts struct {
	defect bool
	runs   int
	mu     sync.Mutex
}

func (d *duplicateStarts) Run(ctx context.Context, _ int, c schedule.Chooser) (Outcome, error) {
	d.mu.Lock()
	d.runs++
	d.mu.Unlock()
	s := schedule.New(schedule.Config{Roles: map[string]string{"1": "state", "3": "request"}, Chooser: c,
		Expect: []string{"poller A", "poller B"}, Window: 100 * time.Millisecond, Limit: 3 * time.Second, Patience: 200 * time.Millisecond})
	var (
		mu       sync.Mutex
		holder   string
		lastPOST string
		runMade  bool
		settled  = map[string]string{}
	)
	write := func(g faultproxy.Gate, r faultproxy.GateRequest, decide func() int) bool {
		done, err := g.Begin(ctx, r)
		if err != nil {
			return false
		}
		mu.Lock()
		st := decide()
		mu.Unlock()
		done(st)
		return st == 200
	}
	poller := func(name string) {
		g := s.Gate(name)
		defer s.Exited(name)
		write(g, faultproxy.GateRequest{Method: "PUT", Path: "/k/v1/record.json", App: "3", RecordID: name, Revision: "1",
			Values: map[string]string{"request_state": "ACCEPTED", "claimed_at": "now"}}, func() int { return 200 })
		got := write(g, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "1", RecordKey: "LOCK:n1"}, func() int {
			defer func() { lastPOST = name }()
			if holder == "" || (d.defect && lastPOST != "" && lastPOST != name) {
				holder = name
				return 200
			}
			return 400
		})
		outcome := "REJECTED/LOCK_CONFLICT"
		if got {
			if runMade {
				outcome = "DONE/NOOP_ALREADY_SUCCESS"
			} else {
				write(g, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "1", RecordKey: "R1:k"}, func() int { runMade = true; return 200 })
				outcome = "DONE/OK"
			}
			write(g, faultproxy.GateRequest{Method: "PUT", Path: "/k/v1/record.json", App: "1", RecordKey: "LOCKDONE:x", Revision: "2"}, func() int {
				if holder == name {
					holder = ""
				}
				return 200
			})
		} else if runMade {
			outcome = "DONE/NOOP_ALREADY_SUCCESS"
		}
		mu.Lock()
		settled[name] = outcome
		mu.Unlock()
	}
	var wg sync.WaitGroup
	s.Start(ctx)
	for _, p := range []string{"poller A", "poller B"} {
		wg.Add(1)
		go func() { defer wg.Done(); poller(p) }()
	}
	wg.Wait()
	res := s.Stop()
	s.Wait()
	a, b := settled["poller A"], settled["poller B"]
	if b < a {
		a, b = b, a
	}
	return Outcome{Passed: true, Branch: a + " + " + b, Result: res}, nil
}

func orders(rep *Report) []string {
	var out []string
	for _, s := range rep.Schedules {
		out = append(out, schedule.Order(s.Order))
	}
	return out
}

func TestSameSeedGivesTheSameSchedulesAndBranchesAreCounted(t *testing.T) {
	run := func() *Report {
		st, err := schedule.NewStrategy("random", 1, 0, 0)
		require.NoError(t, err)
		rep, err := Explore(context.Background(), &duplicateStarts{}, Options{Scenario: "fake", Strategy: st, Schedules: 32, Workers: 4})
		require.NoError(t, err)
		return rep
	}
	first, second := run(), run()
	assert.Equal(t, orders(first), orders(second), "seed 1 twice")
	assert.Equal(t, 32, first.SchedulesRun)
	assert.Equal(t, 32, first.DistinctOrder+first.Duplicates)
	assert.Greater(t, first.DistinctOrder, 1)
	assert.GreaterOrEqual(t, len(first.Branches), 2, "both outcomes of the race: %v", first.Branches)
	total := 0
	for _, n := range first.Branches {
		total += n
	}
	assert.Equal(t, 32, total)
	assert.Empty(t, first.Violations)
	assert.Equal(t, 32, first.Passed)
}

func TestDFSRunsUntilExhaustedWithSeveralWorkers(t *testing.T) {
	st, err := schedule.NewStrategy("dfs", 0, 0, 1)
	require.NoError(t, err)
	rep, err := Explore(context.Background(), &duplicateStarts{}, Options{Scenario: "fake", Strategy: st, Schedules: 100, Workers: 3})
	require.NoError(t, err)
	assert.True(t, rep.Exhausted)
	assert.Less(t, rep.SchedulesRun, 100)
	assert.Equal(t, rep.SchedulesRun, rep.DistinctOrder, "dfs plans no order twice (the fake is deterministic)")
}

func TestAViolationIsFoundShrunkWrittenAndReplaysToTheSameFailure(t *testing.T) {
	st, err := schedule.NewStrategy("dfs", 0, 0, 2)
	require.NoError(t, err)
	fake := &duplicateStarts{defect: true}
	var progress bytes.Buffer
	rep, err := Explore(context.Background(), fake, Options{Scenario: "fake", Strategy: st, Schedules: 30, Workers: 2, ShrinkRuns: 8, Progress: &progress})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Violations, "the defect needs an order: %s", progress.String())
	v := rep.Violations[0]
	assert.Equal(t, "lock-intervals-disjoint", v.Schedule.Violations[0].Invariant)
	assert.Less(t, len(v.Replay), v.ShrunkFrom, "shrunk: %s", progress.String())
	assert.True(t, v.Shrunk)
	assert.Contains(t, progress.String(), "VIOLATION invariant lock-intervals-disjoint")

	dir := t.TempDir()
	require.NoError(t, Write(dir, rep, func(f string) string { return "flowtest explore fake --replay " + f }, nil, results.NewWriter(dir, redact.New(nil, nil), results.JSONText)))
	f, err := LoadReplay(filepath.Join(dir, rep.Violations[0].File))
	require.NoError(t, err)
	assert.Equal(t, "invariant lock-intervals-disjoint", f.Failure)
	assert.Contains(t, f.Command, "--replay")
	out, err := fake.Run(context.Background(), 1, schedule.Replay(f.Replay))
	require.NoError(t, err)
	again := judge(1, out, 0)
	assert.Equal(t, v.Schedule.failure(), again.failure(), "the shrunk schedule replays to the same failure")
	assert.Contains(t, Markdown(rep), "Violating schedules")
}

func TestExploreNeedsABudget(t *testing.T) {
	st, _ := schedule.NewStrategy("random", 1, 0, 0)
	_, err := Explore(context.Background(), &duplicateStarts{}, Options{Strategy: st})
	assert.Error(t, err)
}

func TestTheReportPageShowsBranchesViolationsAndEverySchedule(t *testing.T) {
	rep := &Report{Scenario: "p2-11-03-duplicates", Strategy: "random", Seed: 1, SchedulesRun: 2, DistinctOrder: 2,
		Branches: map[string]int{"DONE/OK + REJECTED/LOCK_CONFLICT": 1, "DONE/OK + REJECTED/DUPLICATE_RECORD": 1},
		Schedules: []ScheduleRun{
			{N: 1, Passed: true, Branch: "DONE/OK + REJECTED/LOCK_CONFLICT", Archive: "runs/2026/1-run-1"},
			{N: 2, Assertion: "outcomes of the two STARTs of one key", Reason: "failed: <saw> first: REJECTED/DUPLICATE_RECORD", Branch: "DONE/OK + REJECTED/DUPLICATE_RECORD"},
		}}
	rep.Violations = []Violating{{Schedule: rep.Schedules[1], Shrunk: true, ShrunkFrom: 30, Command: "flowtest explore p2-11-03-duplicates --replay x/2.json",
		Replay: []schedule.Signature{{Process: "poller A", Method: "PUT", Role: "request"}}, Gherkin: "schedules/2.feature"}}
	page, err := HTML(rep)
	require.NoError(t, err)
	for _, want := range []string{"DONE/OK &#43; REJECTED/DUPLICATE_RECORD</td><td>1", "schedule 2: assertion outcomes of the two STARTs of one key",
		"1 releases forced, shrunk from 30", `<a href="schedules/2.feature">`, "<code>1. poller A PUT request</code>", `<a href="runs/2026/1-run-1/index.html">record</a>`,
		"&lt;saw&gt;"} {
		assert.Contains(t, page, want)
	}
	md := Markdown(rep)
	assert.Contains(t, md, "forced order: 1. poller A PUT request")
	assert.Contains(t, md, "`schedules/2.feature`")
}

// A redirected exploration says in explore.json and in its README which scenario was asked
// for, which one ran and why.
func TestARedirectIsRecordedInTheReportAndTheReadme(t *testing.T) {
	dir := t.TempDir()
	rep := &Report{Scenario: "free", Strategy: "random", Branches: map[string]int{},
		Via: &Redirect{From: "forced", To: "free", Reason: "its barriers force one order"}}
	require.NoError(t, Write(dir, rep, nil, nil, results.NewWriter(dir, redact.New(nil, nil), results.JSONText)))
	data, err := os.ReadFile(filepath.Join(dir, "explore.json"))
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	require.NotNil(t, back.Via)
	assert.Equal(t, *rep.Via, *back.Via)
	assert.Contains(t, Markdown(rep), "Asked for forced, whose manifest entry redirects its exploration here (explore via free): its barriers force one order")
	assert.NotContains(t, Markdown(&Report{Scenario: "free"}), "Asked for")
}

// A schedule failing an assertion and an invariant fails another way than one breaking the
// invariant alone: each is shrunk and kept as a way of failing of its own.
func TestFailureNamesEveryWayASchedulesFailed(t *testing.T) {
	inv := []schedule.Violation{{Invariant: "puts-fenced"}, {Invariant: "one-claim-per-request"}, {Invariant: "puts-fenced"}}
	assert.Equal(t, "assertion outcome of the race; invariant one-claim-per-request,puts-fenced",
		ScheduleRun{Assertion: "outcome of the race", Violations: inv}.Failure())
	assert.Equal(t, "invariant one-claim-per-request,puts-fenced", ScheduleRun{Passed: true, Violations: inv}.Failure())
	assert.Equal(t, "assertion outcome of the race", ScheduleRun{Assertion: "outcome of the race"}.Failure())
	assert.Equal(t, "scenario failed", ScheduleRun{}.Failure())
}

// Every file of an exploration passes the run's redactor (issue 42): a token a failing
// process printed, quoted by the schedule's failure, is not in explore.json nor in the replay
// file, whose failure text ("reason") stays readable.
func TestWriteRedacts(t *testing.T) {
	const token = "Expl0re-T0ken-1a2b3c4d5e"
	dir := t.TempDir()
	sched := ScheduleRun{N: 2, Assertion: "outcomes", Reason: "failed: writer printed " + token}
	rep := &Report{Scenario: "fake", Strategy: "random", Branches: map[string]int{}, Schedules: []ScheduleRun{sched},
		Violations: []Violating{{Schedule: sched, Replay: []schedule.Signature{{Process: "poller A", Method: "PUT", Role: "request"}}}}}
	red := redact.New(map[string]string{"KINTONE_TOKEN": token}, nil)
	require.NoError(t, Write(dir, rep, func(f string) string { return "flowtest explore fake --replay " + f }, nil, results.NewWriter(dir, red, results.JSONText)))
	for _, name := range []string{"explore.json", "schedules/2.json"} {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		assert.NotContains(t, string(data), token, name)
		assert.Contains(t, string(data), "failed: writer printed [REDACTED:KINTONE_TOKEN]", name)
		assert.True(t, json.Valid(data), name)
	}
	f, err := LoadReplay(filepath.Join(dir, "schedules", "2.json"))
	require.NoError(t, err)
	assert.Equal(t, "fake", f.Scenario)
}
