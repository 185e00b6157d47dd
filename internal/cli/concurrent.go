package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/harness/config"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/safety"
	"github.com/ksqlflow/flowtest/steps"
)

// defaultConcurrency is the sandbox's concurrency when neither --concurrency nor
// FLOWTEST_CONCURRENCY says: scenarios mostly wait (leases, pollers, long reads), so three
// per core, at most 8 (6 on a 2-core machine). Live runs are serial (one tenant).
func defaultConcurrency() int {
	n := 3 * runtime.NumCPU()
	if n > 8 {
		n = 8
	}
	if n < 2 {
		n = 2
	}
	return n
}

// concurrency is the run's: as configured, else the sandbox default, else 1.
func (s *session) concurrency() int {
	if _, set := s.cfg.Lookup(config.VarConcurrency); set || s.in.Target != safety.TargetSandbox {
		return s.cfg.Concurrency
	}
	return defaultConcurrency()
}

// isolation gives each concurrently running scenario its own kintone emulator, so that
// nothing a scenario reads app-wide (the pending-request gate, "no REQUESTED record",
// revision snapshots of a whole app, the JOB log) can see another scenario's records. The
// emulator starts in about 20 ms (measured), so it is one per scenario, not one per worker:
// a scenario never sees what an earlier one left either. The run's own emulator (the one
// preflight resolved and the run lock names) serves serial runs, as before.
type isolation struct {
	bin     string
	profile string
	base    *steps.Suite
	secrets *runSecrets
	appIDs  map[string]string // app id → role of the run's emulator: every emulator must match
	latency map[string]time.Duration

	mu      sync.Mutex
	targets map[*scenario.State]*target.Target
	started int
}

func newIsolation(bin, profile string, base *steps.Suite, secrets *runSecrets, run *target.Target) *isolation {
	return &isolation{bin: bin, profile: profile, base: base, secrets: secrets, appIDs: run.AppRoles(),
		targets: map[*scenario.State]*target.Target{}}
}

// beforeScenario starts the scenario's emulator, teaches the redactor its tokens, schedules
// its stop as the scenario's last cleanup, and prepares the scene on a copy of the suite
// that points at it.
func (iso *isolation) beforeScenario(ctx context.Context, st *scenario.State) error {
	// The emulator lives until the scenario's cleanup has run, which is after godog's
	// context ends and after the cleanup kills the scenario's registered processes: it gets
	// a context of its own, without the scenario's process registry (Abort kills it on a
	// second interrupt, its stop is the scenario's last cleanup).
	t, err := target.StartSandbox(context.Background(), target.SandboxOptions{
		Bin: iso.bin, WorkDir: filepath.Join(st.WorkDir, "sandbox"), Profile: iso.profile,
		Latency: iso.latency, Log: io.Discard,
	})
	if err != nil {
		return fmt.Errorf("the scenario's own kintone emulator: %w", err)
	}
	// Every emulator mints its own tokens: each is a secret under a name of its own (the
	// redactor keys secrets by name), for the records and the archive's leak check.
	iso.mu.Lock()
	iso.started++
	n := iso.started
	iso.mu.Unlock()
	for k, v := range t.Secrets() {
		iso.secrets.AddSecret(fmt.Sprintf("%s_S%d", k, n), v)
	}
	// App ids are redacted by role through the run's table: an emulator with other ids
	// would leak them into the archive.
	for id, role := range t.AppRoles() {
		if iso.appIDs[id] != role {
			t.Close()
			return fmt.Errorf("the scenario's emulator made app %s as %s, the run's emulator has %q: app ids would not be redacted", id, role, iso.appIDs[id])
		}
	}
	iso.mu.Lock()
	iso.targets[st] = t
	iso.mu.Unlock()
	// Pushed first, so it runs last (LIFO): after the scope's records are deleted.
	st.Defer("stop the scenario's kintone emulator", func(context.Context) error {
		iso.mu.Lock()
		delete(iso.targets, st)
		iso.mu.Unlock()
		return t.Close()
	})
	own := *iso.base
	own.Target = t
	own.Cleaner = newCleaner(t)
	return own.BeforeScenario(ctx, st)
}

// target returns the scenario's emulator (nil before it started).
func (iso *isolation) target(st *scenario.State) *target.Target {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	return iso.targets[st]
}

// abort kills every running scenario's emulator at once (second interrupt).
func (iso *isolation) abort() {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	for _, t := range iso.targets {
		t.Abort()
	}
}

// slowest lists the n longest scenario durations of records, for the closing line.
func slowest(durations map[string]time.Duration, n int) []string {
	ids := make([]string, 0, len(durations))
	for id := range durations {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if durations[ids[i]] != durations[ids[j]] {
			return durations[ids[i]] > durations[ids[j]]
		}
		return ids[i] < ids[j]
	})
	if len(ids) > n {
		ids = ids[:n]
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%s %s", id, durations[id].Round(time.Second))
	}
	return out
}
