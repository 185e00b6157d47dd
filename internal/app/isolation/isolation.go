// Package isolation gives each concurrently running scenario a kintone emulator of its own
// (sandbox only): the runner's BeforeScenario starts it, the scenario's last cleanup stops it.
// What a scenario reads app-wide (the pending-request gate, whole-app snapshots) then cannot
// see another scenario's records; it is the run path's concern, apart from the CLI's session.
package isolation

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/target"
)

// Isolation gives each concurrently running scenario its own kintone emulator, so that
// nothing a scenario reads app-wide (the pending-request gate, "no REQUESTED record",
// revision snapshots of a whole app, the JOB log) can see another scenario's records. The
// emulator starts in about 20 ms (measured), so it is one per scenario, not one per worker:
// a scenario never sees what an earlier one left either. The run's own emulator (the one
// preflight resolved and the run lock names) serves serial runs, as before.
type Isolation struct {
	bin     string
	profile string
	prepare func(ctx context.Context, st *scenario.State, t *target.Target) error
	secrets Secrets
	appIDs  map[string]string // app id → role of the run's emulator: every emulator must match
	latency map[string]time.Duration
	product target.Product // the FlowNet every scenario drives, as the run's emulator does

	mu      sync.Mutex
	targets map[*scenario.State]*target.Target
	started int
}

// Secrets learns each emulator's tokens, for the records' redaction and the archive's leak
// check.
type Secrets interface{ AddSecret(name, value string) }

// Options are what the scenarios' emulators are made from.
type Options struct {
	Bin, Profile string                   // the flowsandbox binary; the profile of the run
	Latency      map[string]time.Duration // per business app, as the run's emulator has it
	Run          *target.Target           // the run's emulator: every scenario's must have its app ids
	Secrets      Secrets
	// Prepare prepares the scene of the scenario on its own emulator (the steps' BeforeScenario
	// on a copy of the suite pointing at it).
	Prepare func(ctx context.Context, st *scenario.State, t *target.Target) error
}

func New(o Options) *Isolation {
	return &Isolation{bin: o.Bin, profile: o.Profile, prepare: o.Prepare, secrets: o.Secrets, appIDs: o.Run.AppRoles(),
		latency: o.Latency, product: o.Run.Product, targets: map[*scenario.State]*target.Target{}}
}

// BeforeScenario starts the scenario's emulator, teaches the redactor its tokens, schedules
// its stop as the scenario's last cleanup, and prepares the scene on a copy of the suite
// that points at it.
func (iso *Isolation) BeforeScenario(ctx context.Context, st *scenario.State) error {
	// The emulator lives until the scenario's cleanup has run, which is after godog's
	// context ends and after the cleanup kills the scenario's registered processes: it gets
	// a context of its own, without the scenario's process registry (Abort kills it on a
	// second interrupt, its stop is the scenario's last cleanup).
	t, err := target.StartSandbox(context.Background(), target.SandboxOptions{
		Bin: iso.bin, WorkDir: filepath.Join(st.WorkDir, "sandbox"), Profile: iso.profile,
		Latency: iso.latency, Log: io.Discard, Product: iso.product,
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
	return iso.prepare(ctx, st, t)
}

// Target returns the scenario's emulator (nil before it started).
func (iso *Isolation) Target(st *scenario.State) *target.Target {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	return iso.targets[st]
}

// Abort kills every running scenario's emulator at once (second interrupt).
func (iso *Isolation) Abort() {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	for _, t := range iso.targets {
		t.Abort()
	}
}
