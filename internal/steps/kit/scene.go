package kit

import (
	"context"
	"fmt"
	"io"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/ksqlresult"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// Suite is what every scenario of a run shares.
type Suite struct {
	Target      *target.Target
	FixturesDir string // absolute path of features/fixtures
	// ConfirmedBy names the operator who confirms force-unlock cleanups. Empty on the
	// sandbox means the scope's own principal confirms (live mode refuses to start a
	// scenario that needs a confirmer without one: see the preflight).
	ConfirmedBy string
	// Scopes are made during preflight, so that the identifiers the safety layer checked are
	// exactly the ones the scenario uses.
	Scopes map[string]*scope.Scope
	// CheckIdentifiers applies the preflight's identifier rules to identifiers made later
	// (a trial's sub-scope). Nil means no later identifier may be made.
	CheckIdentifiers func(ids []safety.Identifier) error
	// CheckFixture applies the preflight's fixture rules (SQL allow-list, job ids) to a
	// fixture a scenario changes after preflight (an edited working copy). Nil refuses edits.
	CheckFixture func(f safety.Fixture) error
	// Cleaner deletes the scope's records after a scenario (the guarded harness client).
	Cleaner Cleaner
	// ArchiveDir is the run's archive folder; a scenario's record is its evidence reference.
	ArchiveDir string
	Log        io.Writer
	// FlowtestBin is the flowtest executable: the CSV steps give FlowNet its hidden
	// ksql-flow-wrapper as the kSQL-Flow launcher (a kSQL-Flow without importCsv, an SJIS export).
	FlowtestBin string
	// Redact learns values a scenario makes that must never reach the archive (a request's
	// reason body, a fake token handed to a process). Nil: nothing to register (unit tests).
	Redact Redaction
}

// Redaction is the archive writer's redactor as the steps see it.
type Redaction interface {
	AddReason(body string)
	AddSecret(name, value string)
}

// Cleaner removes what a scenario left in the state and audit apps.
type Cleaner interface {
	DeleteScope(ctx context.Context, sc *scope.Scope, runIDs []string) (deleted int, err error)
}

// Scene is what every domain of one scenario reads and none writes after BeforeScenario:
// the suite, the scenario state, the read-only kintone client and the launch hooks.
type Scene struct {
	Suite       *Suite
	St          *scenario.State
	Reader      *kintoneapi.Client
	KsqlWorkDir string // KSQL_FLOW_WORKDIR given to FlowNet (where execution results land)
	hooks       launchHooks
}

var SceneKey = scenario.NewKey[Scene]("scene")

func SceneOf(ctx context.Context) *Scene {
	sc := SceneKey.Of(scenario.From(ctx))
	if sc.St == nil {
		panic("steps: scenario has no scene (BeforeScenario did not run)")
	}
	return sc
}

func (s *Scene) App(role string) string { return s.Suite.Target.Apps[role].ID }

// launchHooks are what the groups above the kit add to the processes it starts, registered
// in their BeforeScenario: the kit starts every FlowNet command and named process, while the
// proxies, the CSV IO root and the explore gate belong to groups that import the kit.
type launchHooks struct {
	// beforeFlowNet runs before a FlowNet subcommand starts.
	beforeFlowNet []func(ctx context.Context, sub string) error
	// flownetEnv adds to the environment of every FlowNet command of the scope, in order.
	flownetEnv []func(sc *Scene, fx *FixtureState) []string
	// processEnv adds the environment of one named FlowNet process, after its own.
	processEnv []func(ctx context.Context, name string) ([]string, error)
	// started hears of every child started, with its end and a probe of its activity.
	started []func(st *scenario.State, name string, done <-chan struct{}, busy func() bool)
}

// BeforeFlowNetStarts adds a hook run before each FlowNet command starts.
func (s *Scene) BeforeFlowNetStarts(f func(ctx context.Context, sub string) error) {
	s.hooks.beforeFlowNet = append(s.hooks.beforeFlowNet, f)
}

// AddFlowNetEnv adds a part of the environment every FlowNet command of the scope gets.
func (s *Scene) AddFlowNetEnv(f func(sc *Scene, fx *FixtureState) []string) {
	s.hooks.flownetEnv = append(s.hooks.flownetEnv, f)
}

// AddProcessEnv adds a part of one named FlowNet process's environment.
func (s *Scene) AddProcessEnv(f func(ctx context.Context, name string) ([]string, error)) {
	s.hooks.processEnv = append(s.hooks.processEnv, f)
}

// OnChildStarted adds an observer of every child the scenario starts.
func (s *Scene) OnChildStarted(f func(st *scenario.State, name string, done <-chan struct{}, busy func() bool)) {
	s.hooks.started = append(s.hooks.started, f)
}

// PrepareScene prepares the scene of one scenario, hands the scope to the fixture domain
// and pushes the record cleanup; the groups above the kit add their hooks after it.
func (s *Suite) PrepareScene(ctx context.Context, st *scenario.State) error {
	sc, ok := s.Scopes[st.ID]
	if !ok {
		return fmt.Errorf("no scope was made for scenario %s during preflight", st.ID)
	}
	roles := []string{target.RoleState, target.RoleAudit, target.RoleLog}
	if a, ok := s.Target.Apps[target.RoleRequest]; ok && a.ID != "" && a.Tokens["read"] != "" {
		roles = append(roles, target.RoleRequest) // request scenarios read what the poller decided
	}
	reader, err := s.Target.ReadClient(roles...)
	if err != nil {
		return fmt.Errorf("kintone reader: %w", err)
	}
	*SceneKey.Of(st) = Scene{Suite: s, St: st, Reader: kintoneguard.Counted(reader, st.API), KsqlWorkDir: ksqlresult.WorkDir(st.WorkDir)}
	for _, t := range st.Tags {
		if t == "@p2-16" { // P2-16 records hold request and process summaries only (scenarios.md §2.7)
			st.SummarizeOutputs()
		}
	}
	fx := FixtureKey.Of(st)
	fx.Begin(sc)
	if s.Cleaner != nil {
		st.Defer("delete the scope's records in the state and audit apps", func(ctx context.Context) error {
			n, err := s.Cleaner.DeleteScope(ctx, fx.Scope(), processKey.Of(st).runIDs(fx.Scope()))
			if err != nil {
				return err
			}
			fmt.Fprintf(st.Log, "  cleanup: deleted %d records of scope %s\n", n, fx.Scope().ID())
			return nil
		})
	}
	return nil
}
