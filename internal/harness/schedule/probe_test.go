package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
)

func TestAProbedProcessIsQuietOnlyWhenSeenAsleepThroughTheWindow(t *testing.T) {
	s := New(Config{Roles: testRoles, Window: time.Second})
	now := time.Now()
	s.procs = map[string]*procState{"A": {held: 1, last: now.Add(-time.Hour)}}
	s.held = []*heldWrite{{process: "A"}}

	// B: silent for an hour, but a look a moment ago found its tree running (computing,
	// starved of a CPU, a child starting): it will send, it is not quiet.
	s.procs["B"] = &procState{last: now.Add(-time.Hour), probe: &probeState{busyAt: now.Add(-10 * time.Millisecond), sampledAt: now.Add(-10 * time.Millisecond)}}
	q, until := s.quiescentLocked(now)
	assert.False(t, q, "busy but silent")
	assert.Equal(t, now.Add(990*time.Millisecond), until, "a window after the busy look, if no other comes")
	q, _ = s.quiescentLocked(until)
	assert.False(t, q, "no look has confirmed it asleep since")

	// Seen asleep after the window ended, and busy no later than a window before: quiet.
	s.procs["B"].probe = &probeState{busyAt: now.Add(-2 * time.Second), sampledAt: now, asleep: true}
	q, _ = s.quiescentLocked(now)
	assert.True(t, q, "asleep and silent")

	// Asleep now, but silence alone would not do either: it sent within the window.
	s.procs["B"].last = now.Add(-300 * time.Millisecond)
	q, until = s.quiescentLocked(now)
	assert.False(t, q, "sent within the window")
	assert.Equal(t, now.Add(700*time.Millisecond), until)
	s.procs["B"].last = now.Add(-time.Hour)

	// A process with a write held waits on the scheduler, once a look since that write
	// came finds nothing else of it running.
	s.procs["A"].probe = &probeState{busyAt: now, sampledAt: now.Add(-time.Millisecond)}
	s.procs["A"].last = now
	q, _ = s.quiescentLocked(now)
	assert.False(t, q, "A's write is held but no look since")
	s.procs["A"].probe = &probeState{busyAt: now, sampledAt: now.Add(time.Millisecond), asleep: false}
	q, _ = s.quiescentLocked(now.Add(time.Millisecond))
	assert.False(t, q, "A's write is held and its tree still runs")
	s.procs["A"].probe = &probeState{busyAt: now, sampledAt: now.Add(time.Millisecond), asleep: true}
	q, _ = s.quiescentLocked(now.Add(time.Millisecond))
	assert.True(t, q, "A's write is held and it sleeps")

	// An exited process has nothing left to run, whatever its last look said.
	s.procs["B"] = &procState{exited: true, last: now, probe: &probeState{busyAt: now}}
	q, _ = s.quiescentLocked(now.Add(time.Millisecond))
	assert.True(t, q)

	// Without a probe silence alone judges, as before.
	s.procs["B"] = &procState{last: now.Add(-2 * time.Second)}
	q, _ = s.quiescentLocked(now.Add(time.Millisecond))
	assert.True(t, q, "no probe: silent for the window is quiet")
}

// busySilent: A holds a write at once; B sends nothing for three windows while its probe says
// it is busy, then sends its write. With the probe both writes are held at the first choice;
// without it B looks idle and A's write goes first alone.
func TestABusySilentProcessHoldsTheScheduleUntilItsWrite(t *testing.T) {
	for _, probed := range []bool{true, false} {
		t.Run(map[bool]string{true: "probed", false: "no probe"}[probed], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const window = 100 * time.Millisecond
			s := New(Config{Roles: testRoles, Chooser: Replay(nil), Expect: []string{"A", "B"}, Window: window, Limit: 10 * time.Second})
			var busy atomic.Bool
			busy.Store(true)
			ga, gb := s.Gate("A"), s.Gate("B")
			if probed {
				s.Probe("A", func() bool { return false })
				s.Probe("B", busy.Load)
			}
			var wg sync.WaitGroup
			send := func(g faultproxy.Gate, name, kind string) {
				defer wg.Done()
				defer s.Exited(name)
				done, err := g.Begin(ctx, faultproxy.GateRequest{Method: "POST", Path: "/k/v1/record.json", App: "1", RecordKey: kind + ":x"})
				if assert.NoError(t, err) {
					done(200)
				}
			}
			// B's read, answered at once: it has started (sent) and is silent from here.
			done, err := gb.Begin(ctx, faultproxy.GateRequest{Method: "GET", Path: "/k/v1/records.json", App: "1"})
			require.NoError(t, err)
			done(200)
			wg.Add(2)
			go send(ga, "A", "LOCK")
			s.Start(ctx)
			go func() {
				time.Sleep(3 * window) // computing, as its probe says
				busy.Store(false)
				send(gb, "B", "RUN")
			}()
			wg.Wait()
			r := s.Stop()
			s.Wait()
			require.NoError(t, ctx.Err())
			require.NotEmpty(t, r.Steps)
			if probed {
				assert.Len(t, r.Steps[0].Enabled, 2, "B was busy, not idle: its write is a candidate of the first choice")
			} else {
				assert.Len(t, r.Steps[0].Enabled, 1, "silence alone: B looked idle and A went first alone")
			}
		})
	}
}
