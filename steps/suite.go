// Package steps holds the step definitions of the acceptance scenarios, one file per domain
// (runs, records, processes, locks), and the per-scenario world they share. Steps act only
// through the harness (target, proc, scope, wait, kintone) and never ask which target they
// run on: the same text drives the sandbox and a live tenant.
package steps

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/kintoneapi"
)

// Suite is what every scenario of a run shares.
type Suite struct {
	Target      *target.Target
	FixturesDir string // absolute path of features/fixtures
	// ConfirmedBy names the operator who confirms force-unlock cleanups. Empty on the
	// sandbox means the scope's own principal confirms (live mode refuses to start a kill
	// scenario without one: see Preflight).
	ConfirmedBy string
	// Scopes are made during preflight, so that the identifiers the safety layer checked are
	// exactly the ones the scenario uses.
	Scopes map[string]*scope.Scope
	// Cleaner deletes the scope's records after a scenario (the guarded harness client).
	Cleaner Cleaner
	// ArchiveDir is the run's archive folder; a scenario's record is its evidence reference.
	ArchiveDir string
	Log        io.Writer
}

// Cleaner removes what a scenario left in the state and audit apps.
type Cleaner interface {
	DeleteScope(ctx context.Context, sc *scope.Scope, runIDs []string) (deleted int, err error)
}

// Initialize registers every step domain.
func (s *Suite) Initialize(sc *godog.ScenarioContext, reg stepdef.Registry) {
	addRunSteps(reg)
	addRecordSteps(reg)
	addProcessSteps(reg)
	addLockSteps(reg)
}

// BeforeScenario prepares the world of one scenario and pushes its record cleanup.
func (s *Suite) BeforeScenario(ctx context.Context, st *scenario.State) error {
	sc, ok := s.Scopes[st.ID]
	if !ok {
		return fmt.Errorf("no scope was made for scenario %s during preflight", st.ID)
	}
	reader, err := s.Target.ReadClient(target.RoleState, target.RoleAudit, target.RoleLog)
	if err != nil {
		return fmt.Errorf("kintone reader: %w", err)
	}
	w := &world{suite: s, st: st, scope: sc, reader: reader, ksqlWorkDir: filepath.Join(st.WorkDir, "ksql-work")}
	st.Values[worldKey] = w
	if s.Cleaner != nil {
		st.Defer("delete the scope's records in the state and audit apps", func(ctx context.Context) error {
			n, err := s.Cleaner.DeleteScope(ctx, sc, w.runIDs())
			if err != nil {
				return err
			}
			fmt.Fprintf(st.Log, "  cleanup: deleted %d records of scope %s\n", n, sc.ID())
			return nil
		})
	}
	return nil
}

const worldKey = "steps.world"

// world is the state the steps of one scenario share.
type world struct {
	suite       *Suite
	st          *scenario.State
	scope       *scope.Scope
	reader      *kintoneapi.Client
	ksqlWorkDir string

	network        *scope.Rendered
	networkFixture string            // fixture file name, for re-rendering under a trial scope
	networkSwap    map[string]string // node -> SQL swapped in
	calls          []*flownetCall
	runID          string // the run the scenario is about (from the first call)

	// snapshot of attempts taken before a resume, by fixture node id
	attemptsBefore map[string][]kintoneapi.Record

	runningAttempt *kintoneapi.Record // the attempt found RUNNING by "has a RUNNING attempt"
	runningNode    string
	killed         bool
	holder         *holderRun
	recovery       map[string]any
}

func worldFrom(ctx context.Context) *world {
	st := scenario.From(ctx)
	w, ok := st.Values[worldKey].(*world)
	if !ok {
		panic("steps: scenario has no world (BeforeScenario did not run)")
	}
	return w
}

func (w *world) runIDs() []string {
	seen := map[string]bool{}
	var out []string
	if w.runID != "" {
		seen[w.runID] = true
		out = append(out, w.runID)
	}
	for _, c := range w.calls {
		if c.runID != "" && !seen[c.runID] {
			seen[c.runID] = true
			out = append(out, c.runID)
		}
	}
	sort.Strings(out)
	return out
}

// nodeID maps a fixture node id (as the feature text names it) to the rendered one.
func (w *world) nodeID(fixtureNode string) (string, error) {
	if w.network == nil {
		return "", fmt.Errorf("no network fixture was rendered (missing Given the network fixture …)")
	}
	id, ok := w.network.NodeIDs[fixtureNode]
	if !ok {
		return "", fmt.Errorf("network %s has no node %q", w.network.FixtureNetworkID, fixtureNode)
	}
	return id, nil
}

// fixtureNode maps a rendered node id back to the fixture's name, for messages.
func (w *world) fixtureNode(id string) string {
	if w.network != nil {
		for f, r := range w.network.NodeIDs {
			if r == id {
				return f
			}
		}
	}
	return id
}

// FixturesOf lists the network fixtures and SQL files a scenario's steps name, so the
// preflight can render and check them before anything runs.
func FixturesOf(stepTexts []string) (networks []string, sqls []string) {
	seenN, seenS := map[string]bool{}, map[string]bool{}
	for _, t := range stepTexts {
		for _, m := range networkRef.FindAllString(t, -1) {
			if !seenN[m] {
				seenN[m] = true
				networks = append(networks, m)
			}
		}
		for _, m := range sqlRef.FindAllString(t, -1) {
			if !seenS[m] {
				seenS[m] = true
				sqls = append(sqls, m)
			}
		}
	}
	return networks, sqls
}

var (
	networkRef = regexp.MustCompile(`network-[a-z0-9-]+\.yaml`)
	sqlRef     = regexp.MustCompile(`[a-z0-9-]+\.sql`)
)
