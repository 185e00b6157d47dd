// Package steps holds the step definitions of the acceptance scenarios as a tree of packages
// in layers, each importing only those below it (internal/repo/layering checks the order, the
// compiler refuses a cycle):
//
//	kit          the scene, fixtures, named processes, the FlowNet launcher, runs, records, views, keys, snapshots
//	proxy        fault proxies, barriers, selective faults, traffic, the kSQL-Flow and counting proxies, explore hooks
//	operator     status, holds, force-unlock, resolve, job unlock, orphans, stops, kill, job locks, the JOB log
//	requests     operation requests, pollers, starts, the lifecycle, the requester, orders, the races
//	csv          the CSV domains, beside operator and requests (csv/wrapmode: the wrapper's modes, a leaf)
//	invariants   the contract's invariants after every scenario of flowtest run
//
// Each domain owns its file, opens with one registration table of named handlers and keeps
// its own state, fetched from the scenario by a typed key (internal/harness/scenario.Key);
// another domain reaches that state only through its methods (domains_test.go checks that
// rule and every package's file list). Each group registers its domains with one AddStepsTo;
// where the kit starts a process that a group above must shape (its proxy, its environment,
// the explore watch), that group registers a hook on the kit's scene in its BeforeScenario.
// This package keeps only the entry points:
//
//	suite.go     the Suite, Initialize (one registration per group), BeforeScenario, what the commands use
//
// Steps act only through the harness (target, proc, scope, wait, kintone) and never ask
// which target they run on: the same text drives the sandbox and a live tenant.
package steps

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/steps/csv"
	"github.com/ksqlflow/flowtest/internal/steps/invariants"
	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/operator"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
	"github.com/ksqlflow/flowtest/internal/steps/requests"
)

// Suite is what every scenario of a run shares (kit.Suite), with the runner's entry points.
type Suite kit.Suite

// Initialize registers every step group, bottom first.
func (s *Suite) Initialize(_ *godog.ScenarioContext, reg stepdef.Registry) {
	kit.AddStepsTo(reg)
	proxy.AddStepsTo(reg)
	operator.AddStepsTo(reg)
	requests.AddStepsTo(reg)
	csv.AddStepsTo(reg)
}

// BeforeScenario prepares the kit's scene of one scenario, then lets the groups above the
// kit hook into the processes it starts: CSV before the proxies, the order the FlowNet
// environment always listed them in.
func (s *Suite) BeforeScenario(ctx context.Context, st *scenario.State) error {
	if err := (*kit.Suite)(s).PrepareScene(ctx, st); err != nil {
		return err
	}
	csv.BeforeScenario(st)
	proxy.BeforeScenario(st)
	return nil
}

// What the commands use of the step library, so they import this package only.

// ExemptionStaleNote is the note of an exemption whose invariant held: the run lists them.
const ExemptionStaleNote = invariants.ExemptionStaleNote

// FixtureRef is one fixture file a scenario's step names (kit.FixtureRef).
type FixtureRef = kit.FixtureRef

// CheckInvariants runs every invariant over the scenario's writes and final records.
func CheckInvariants(ctx context.Context, st *scenario.State, exempt map[string]string) error {
	return invariants.CheckInvariants(ctx, st, exempt)
}

// FinalRecords reads the scope's final state, audit and request records.
func FinalRecords(ctx context.Context, st *scenario.State) (state, audit, request []schedule.Record, err error) {
	return invariants.FinalRecords(ctx, st)
}

// Explore makes st's run an explored one: the writes of processes go through s.
func Explore(st *scenario.State, s *schedule.Scheduler, processes []string) {
	proxy.Explore(st, s, processes)
}

// FixturesOf lists the fixture files a scenario's steps name, for the preflight.
func FixturesOf(stepLines []string) []FixtureRef { return kit.FixtureRefs(stepLines) }

// SQLFolder is the folder of the SQL files under fixturesDir.
func SQLFolder(fixturesDir string) string { return kit.SQLFolder(fixturesDir) }
