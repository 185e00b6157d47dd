// Package steps holds the step definitions of the acceptance scenarios. Each domain owns its
// file, opens with one registration table of named handlers and keeps its own state,
// fetched from the scenario by a typed key (internal/harness/scenario.Key); another domain reaches
// that state only through its methods (domains_test.go checks both this list and that rule):
//
//	suite.go         the entry points: Initialize (one registration per group), BeforeScenario
//	scene.go         the Suite every scenario shares, the scene, its launch hooks
//	index_kit.go     the kit's step domains
//	index_proxy.go   the proxy group's step domains and its hooks into the processes the kit starts
//	index_operator.go  the operator group's step domains
//	index_requests.go  the request group's step domains
//	index_csv.go     the CSV group's step domains and its hook (the IO root in FlowNet's environment)
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

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// Initialize registers every step group.
func (s *Suite) Initialize(_ *godog.ScenarioContext, reg stepdef.Registry) {
	addKitSteps(reg)
	addProxySteps(reg)
	addOperatorSteps(reg)
	addRequestSteps(reg)
	addCSVSteps(reg)
}

// BeforeScenario prepares the kit's scene of one scenario, then lets the groups above the
// kit hook into the processes it starts: CSV before the proxies, the order the FlowNet
// environment always listed them in.
func (s *Suite) BeforeScenario(ctx context.Context, st *scenario.State) error {
	if err := s.prepareScene(ctx, st); err != nil {
		return err
	}
	hookCSVIO(st)
	hookProxies(st)
	return nil
}
