// The record types under their old names: the archive, its readers and the callers across
// the module name them results.X; the one definition is in package record, the renderers
// in package render.

package results

import (
	"github.com/ksqlflow/flowtest/internal/results/record"
	"github.com/ksqlflow/flowtest/internal/results/render"
)

type (
	Differential    = record.Differential
	DiffRecord      = record.DiffRecord
	DiffProcess     = record.DiffProcess
	GateRecord      = record.GateRecord
	GateSUT         = record.GateSUT
	GateSince       = record.GateSince
	CarryOverRule   = record.CarryOverRule
	GateDiff        = record.GateDiff
	GateScenario    = record.GateScenario
	CarriedOver     = record.CarriedOver
	GateCounts      = record.GateCounts
	KnownDefect     = record.KnownDefect
	KnownDefectMark = record.KnownDefectMark
	Scenario        = record.Scenario
	APIRequests     = record.APIRequests
	AppRequests     = record.AppRequests
	TrafficLine     = record.TrafficLine
	Step            = record.Step
	StepMatch       = record.StepMatch
	Assertion       = record.Assertion
	Note            = record.Note
	Process         = record.Process
	Wait            = record.Wait
	Attempt         = record.Attempt
	AttemptResult   = record.AttemptResult
	BarrierArrival  = record.BarrierArrival
	FaultFiring     = record.FaultFiring
	Cleanup         = record.Cleanup
	Run             = record.Run
	APIBudget       = record.APIBudget
	RunnerCost      = record.RunnerCost
	FlowtestBuild   = record.FlowtestBuild
	ScenarioTime    = record.ScenarioTime
	GateRef         = record.GateRef
	SUTIdentity     = record.SUTIdentity
	Product         = record.Product
	ScenarioSummary = record.ScenarioSummary
	Totals          = record.Totals
	EvidenceRow     = record.EvidenceRow
)

const (
	GateFile               = record.GateFile
	StatusCarriedOver      = record.StatusCarriedOver
	GatePass               = record.GatePass
	GateFail               = record.GateFail
	GateIncomplete         = record.GateIncomplete
	KDReproduced           = record.KDReproduced
	KDNoLongerReproduces   = record.KDNoLongerReproduces
	KDOtherFailure         = record.KDOtherFailure
	SchemaVersion          = record.SchemaVersion
	TailLimit              = record.TailLimit
	ReasonOtherShardPrefix = record.ReasonOtherShardPrefix
	StatusPassed           = record.StatusPassed
	StatusFailed           = record.StatusFailed
	StatusBlocked          = record.StatusBlocked
	StatusInterrupted      = record.StatusInterrupted
	StatusNotRun           = record.StatusNotRun
	NotRunTag              = record.NotRunTag
	NotRunPlatform         = record.NotRunPlatform
	NotRunNotImplemented   = record.NotRunNotImplemented
	NotRunInterrupted      = record.NotRunInterrupted
	RunComplete            = record.RunComplete
	RunInterrupted         = record.RunInterrupted
	WaitReached            = record.WaitReached
	WaitTimedOut           = record.WaitTimedOut
	WaitGaveUp             = record.WaitGaveUp
	ProductReal            = record.ProductReal
	ProductReference       = record.ProductReference
	IndexFile              = render.IndexFile
	SummaryFile            = render.SummaryFile
)

// SanitizeLabel is record.SanitizeLabel, the file-name form of a label.
func SanitizeLabel(label string) string { return record.SanitizeLabel(label) }

// StaleKnownDefects is record.StaleKnownDefects, the flags of known defects that no longer
// reproduce.
func StaleKnownDefects(sums []ScenarioSummary) []string { return record.StaleKnownDefects(sums) }

// Acceptance, TotalsText and RunTotalsText are the renderers' words for a run's tags and
// totals, which the console prints too.
func Acceptance(tags []string) string { return render.Acceptance(tags) }

func TotalsText(t Totals) string { return render.TotalsText(t) }

func RunTotalsText(run *Run) string { return render.RunTotalsText(run) }
