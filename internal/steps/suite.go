// Package steps holds the step definitions of the acceptance scenarios. Each domain owns its
// file, opens with one registration table of named handlers and keeps its own state,
// fetched from the scenario by a typed key (internal/harness/scenario.Key); another domain reaches
// that state only through its methods (domains_test.go checks both this list and that rule):
//
//	suite.go         the Suite every scenario shares, the domain list, the scene, BeforeScenario
//	fixtures.go      the network fixture and the scope it is rendered with
//	fixturefiles.go  the steps that read a fixture file, resolved inside its folder for them and the preflight
//	processes.go     named processes: who is "the FlowNet run", "the holder", …
//	flownet.go       the one FlowNet command runner (every subcommand)
//	runs.go          FlowNet runs: start, resume, exit codes, output, identity
//	records.go       NETWORK_RUN, NODE_STATE, NODE_ATTEMPT, RUN_INVOCATION assertions
//	views.go         typed record views, decoded in one place, exact reads, small text helpers
//	keys.go          the contract's canonical keys (R1, N1, S1, A1)
//	joblog.go        the kSQL-Flow JOB log: correlation, one row per attempt, timing
//	kill.go          a RUNNING attempt and the kill of its kSQL-Flow child
//	ksqlprofile.go   the kSQL-Flow profile from describe-profile; a proxy's proven config copy
//	joblocks.go      kSQL-Flow job locks: inspection and operator recovery
//	lockconflict.go  a standalone kSQL-Flow holding a job lock while FlowNet runs
//	status.go        the operator's status: readings, activity, lock, recovery identifiers
//	holds.go         the operator's cancel-run: a stop request and its release
//	forceunlock.go   the operator's force-unlock-network, its audit, the outbound trap
//	resolves.go      the operator's resolve-node and its ATTEMPT_RESOLUTION
//	refusals.go      a FlowNet call refused with a code; what its stderr must not say
//	snapshots.go     $revision snapshots of the scope's records around read-only commands
//	orphans.go       killing FlowNet (its whole tree, or the parent alone) mid-node
//	requests.go      operation requests: made through the write guard, read back, swept
//	pollers.go       poll-requests as named processes: allow-list, timing, counters
//	starts.go        START expectations: 案件管理 read independently, as_of, JOB log as_of
//	lifecycle.go     the request lifecycle: requester's cancel, CLOSE, archive-run, arrivals
//	requester.go     the requester as a named background party: its cancel through its own proxy, the race it runs
//	explore.go       an explored run: the scheduler's gate on the named processes' proxies
//	invariants.go    the contract's invariants after every scenario of flowtest run: the parties' writes, final records
//	faults.go        a fault proxy per named FlowNet process: modes and outages
//	barriers.go      barriers in those proxies: a request held, waited for, released by name
//	faulttraffic.go  what a process sent through its fault proxy: call budgets, heartbeats, no write after its lease
//	apiproxy.go      the options and CA every proxy shares; a counting proxy for each FlowNet process without a fault proxy
//	ksqlproxy.go     the scenario's kSQL-Flow proxy: every kSQL-Flow process reaches kintone through it, counted
//	selectivefaults.go  selective faults in those proxies: respond, lose-response, reset, delay
//	closerows.go     what one CLOSE left, by §1.9's rows: its JSON union, audit and lock
//	losers.go        one Node State two writers race for: noted, then exactly one write
//	windows.go       windows held by a barrier in the scenario's kSQL-Flow proxy
//	stops.go         the platform's stop signal to a FlowNet run, drained or terminated
//	csvio.go         the CSV IO root, CSV fixtures, the CSV input written and rewritten
//	csvapp.go        the CSV fixture app: rows read exactly, marker row, guarded sweep
//	csvexport.go     CSV exports: where a sink lands, old and temp files, strict decoding
//	csvreceipt.go    input and output audit summaries; a rerun's export against the first
//	csvwrapper.go    kSQL-Flow behind flowtest's wrapper: no importCsv, Shift_JIS exports
//	csvmemory.go     the kSQL-Flow child's peak memory sampled during a CSV import
//	csvleak.go       no IO root path or CSV cell in the run's state and audit records
//	csvfault.go      a one-shot write fault of the kSQL-Flow proxy on the CSV app (csv1-02)
//	clikintone.go    the real cli-kintone importing an export; its output holds no token
//	orders.go        orders only barriers build: background STOP and CLOSE, the hold record, the three-way order
//	closerace.go     a CLOSE and a resume of one Run in a free race: which order the Network lock let happen
//	jobunlocks.go    FlowNet's record-job-unlock: its RECORDED line, its audit, the JOB log left alone
//
// Steps act only through the harness (target, proc, scope, wait, kintone) and never ask
// which target they run on: the same text drives the sandbox and a live tenant.
package steps

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
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

// domains is the step index: every domain's registration table, in this order.
var domains = []func(stepdef.Registry){
	fixtureDomain{}.register,
	processDomain{}.register,
	runDomain{}.register,
	recordDomain{}.register,
	jobLogDomain{}.register,
	killDomain{}.register,
	jobLockDomain{}.register,
	lockConflictDomain{}.register,
	statusDomain{}.register,
	holdDomain{}.register,
	forceUnlockDomain{}.register,
	resolveDomain{}.register,
	refusalDomain{}.register,
	snapshotDomain{}.register,
	orphanDomain{}.register,
	requestDomain{}.register,
	pollerDomain{}.register,
	startDomain{}.register,
	faultDomain{}.register,
	barrierDomain{}.register,
	faultTrafficDomain{}.register,
	windowDomain{}.register,
	stopDomain{}.register,
	csvIODomain{}.register,
	csvAppDomain{}.register,
	csvExportDomain{}.register,
	csvReceiptDomain{}.register,
	csvWrapperDomain{}.register,
	csvMemoryDomain{}.register,
	cliKintoneDomain{}.register,
	csvLeakDomain{}.register,
	csvFaultDomain{}.register,
	lifecycleDomain{}.register,
	requesterDomain{}.register,
	orderDomain{}.register,
	closeRaceDomain{}.register,
	jobUnlockDomain{}.register,
	selectiveFaultDomain{}.register,
	closeRowDomain{}.register,
	loserDomain{}.register,
}

// Initialize registers every step domain.
func (s *Suite) Initialize(_ *godog.ScenarioContext, reg stepdef.Registry) {
	for _, register := range domains {
		register(reg)
	}
}

// scene is what every domain of one scenario reads and none writes after BeforeScenario:
// the suite, the scenario state and the read-only kintone client.
type scene struct {
	suite       *Suite
	st          *scenario.State
	reader      *kintoneapi.Client
	ksqlWorkDir string // KSQL_FLOW_WORKDIR given to FlowNet (where execution results land)
}

var sceneKey = scenario.NewKey[scene]("scene")

func sceneOf(ctx context.Context) *scene {
	sc := sceneKey.Of(scenario.From(ctx))
	if sc.st == nil {
		panic("steps: scenario has no scene (BeforeScenario did not run)")
	}
	return sc
}

func (s *scene) app(role string) string { return s.suite.Target.Apps[role].ID }

// BeforeScenario prepares the scene of one scenario, hands the scope to the fixture domain
// and pushes the record cleanup.
func (s *Suite) BeforeScenario(ctx context.Context, st *scenario.State) error {
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
	*sceneKey.Of(st) = scene{suite: s, st: st, reader: kintoneguard.Counted(reader, st.API), ksqlWorkDir: filepath.Join(st.WorkDir, "ksql-work")}
	for _, t := range st.Tags {
		if t == "@p2-16" { // P2-16 records hold request and process summaries only (scenarios.md §2.7)
			st.SummarizeOutputs()
		}
	}
	fx := fixtureKey.Of(st)
	fx.begin(sc)
	if s.Cleaner != nil {
		st.Defer("delete the scope's records in the state and audit apps", func(ctx context.Context) error {
			n, err := s.Cleaner.DeleteScope(ctx, fx.scope(), processKey.Of(st).runIDs(fx.scope()))
			if err != nil {
				return err
			}
			fmt.Fprintf(st.Log, "  cleanup: deleted %d records of scope %s\n", n, fx.scope().ID())
			return nil
		})
	}
	return nil
}
