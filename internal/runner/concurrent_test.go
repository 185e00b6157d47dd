package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
)

// Scenarios run at once end in any order; the archive lists them in run order.
func TestConcurrentScenariosRunAtOnceAndArchiveInRunOrder(t *testing.T) {
	fsys := selfFeatures(map[string]string{"z/alpha.feature": `Feature: first
  @alpha @s1 @acc-1
  Scenario: alpha is slow
    Given a slow step
    Then another step that passes
`})
	var running, most int32
	var mu sync.Mutex
	ended := []string{}
	// A rendezvous instead of a sleep that hopes they overlap: the two other scenarios that
	// run (beta, delta) begin only once alpha's slow step is under way, and that step waits
	// for them to end. Run at once, all three are running together; run one at a time, the
	// waits end at their limit, one scenario runs at a time, and the assertions below fail.
	alphaWaiting, othersEnded := make(chan struct{}), make(chan struct{})
	const limit = 10 * time.Second
	steps := func(sc *godog.ScenarioContext, reg stepdef.Registry) {
		trivialSteps(sc, reg)
		reg.Step(`^a slow step$`, func() error {
			close(alphaWaiting)
			select {
			case <-othersEnded:
			case <-time.After(limit):
			}
			return nil
		})
		sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
			if s.Name != "alpha is slow" {
				select {
				case <-alphaWaiting:
				case <-time.After(limit):
				}
			}
			n := atomic.AddInt32(&running, 1)
			for {
				m := atomic.LoadInt32(&most)
				if n <= m || atomic.CompareAndSwapInt32(&most, m, n) {
					break
				}
			}
			return ctx, nil
		})
		sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
			atomic.AddInt32(&running, -1)
			mu.Lock()
			ended = append(ended, scenario.From(ctx).ID)
			if len(ended) == 2 && !slices.Contains(ended, "alpha") {
				close(othersEnded)
			}
			mu.Unlock()
			return ctx, nil
		})
	}
	r := execute(t, fsys, plan(t, fsys, ""), Options{Initialize: steps, Concurrency: 3})
	assert.GreaterOrEqual(t, atomic.LoadInt32(&most), int32(2), "scenarios ran one at a time")
	assert.Equal(t, "alpha", ended[len(ended)-1], "the slow scenario should end last")
	assert.Equal(t, []string{"alpha", "beta", "delta"}, startedOrder(r.progress.String()), "scenarios start in run order")

	var ids []string
	for _, s := range r.res.Scenarios {
		ids = append(ids, s.ID)
	}
	manifestOrder := []string{"alpha", "beta", "gamma", "delta", "win-only", "epsilon"}
	assert.Equal(t, manifestOrder, ids, "Result lists run order")

	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "run.json"))
	require.NoError(t, err)
	var run results.Run
	require.NoError(t, json.Unmarshal(data, &run))
	ids = nil
	for _, s := range run.Scenarios {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, manifestOrder, ids, "run.json lists run order")
	junit, err := os.ReadFile(filepath.Join(r.archive.Dir(), "junit.xml"))
	require.NoError(t, err)
	ids = nil
	for _, m := range regexp.MustCompile(`<testcase name="([^"]+)"`).FindAllStringSubmatch(string(junit), -1) {
		ids = append(ids, m[1])
	}
	require.NotEmpty(t, ids)
	assert.Regexp(t, "alpha", ids[0], "junit.xml lists run order")
	assert.Equal(t, ExitFailed, r.res.Code)
}

// Under concurrency a scenario's step chatter goes to its own log; only wait progress,
// prefixed with its id, reaches the console.
func TestScenarioLogKeepsConsoleReadable(t *testing.T) {
	var buf safeBuffer
	console := LockedWriter{W: &buf}
	dir := t.TempDir()
	l := &scenarioLog{id: "m5-x", console: &console}
	l.open(dir, "m5-x")
	l.Write([]byte("  step chatter\nwait: still waiting for the holder (5s of 10m0s)\npartial "))
	l.Write([]byte("line\n"))
	l.close()
	assert.Equal(t, "  [m5-x] wait: still waiting for the holder (5s of 10m0s)\n", buf.String())
	logs, _ := filepath.Glob(filepath.Join(dir, "m5-x-*.log"))
	require.Len(t, logs, 1)
	data, _ := os.ReadFile(logs[0])
	assert.Contains(t, string(data), "step chatter")
	assert.Contains(t, string(data), "partial line")
}

type safeBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}
func (s *safeBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return string(s.b) }

// With several workers the scenario expected to take longest starts first (so that it does
// not start last and set the run's end); one at a time, run order holds whatever is expected.
func TestConcurrentRunStartsLongestExpectedFirst(t *testing.T) {
	fsys := selfFeatures(nil)
	expected := map[string]time.Duration{"delta": 80 * time.Second, "alpha": 5 * time.Second}
	r := execute(t, fsys, plan(t, fsys, ""), Options{Initialize: trivialSteps, Concurrency: 3, Expected: expected})
	// delta 80 s; beta unknown (30 s default weight); alpha 5 s.
	assert.Equal(t, []string{"delta", "beta", "alpha"}, startedOrder(r.progress.String()))
	var ids []string
	for _, s := range r.res.Scenarios {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"alpha", "beta", "gamma", "delta", "win-only", "epsilon"}, ids, "records keep run order")

	serial := execute(t, fsys, plan(t, fsys, ""), Options{Initialize: trivialSteps, Concurrency: 1, Expected: expected})
	assert.Equal(t, []string{"alpha", "beta", "delta"}, startedOrder(serial.progress.String()))
}
