// Package budget decides, before a live run starts, whether it fits the tenant's API budget.
//
// kintone counts REST requests per app and day (10,000 on the standard plan) and tells the
// administrator when an app goes over; a day of gates and reruns on one E2E tenant must stay
// well under that. A live run's requests are estimated per app from an earlier run of the
// same selection (its scenario records' counts, plus what that run sent outside its
// scenarios: the preflight), or, for a scenario no earlier run counted, from a per-scenario
// default on every app of the target; a run whose estimate exceeds the budget on any app is
// refused before anything starts. Pure: counts and a budget in, a verdict out.
package budget

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results"
)

// DefaultPerApp is the budget of one run per app: half of the standard plan's 10,000
// requests per app and day, so that a gate and its rerun fit in one day beside the
// product's own use of the E2E apps.
const DefaultPerApp = 5000

// DefaultPerScenario is the estimate, on every app of the target, of a scenario that no
// earlier run counted. In a full sandbox run the busiest app (state) gets 82 requests per
// scenario on average (3,784 over 46; half the scenarios send under 75 on their busiest app,
// the heaviest 486 on the CSV app), so 100 on every app over-estimates a first run a little
// while a first run of all 46 (4,600 per app) still fits the default budget.
const DefaultPerScenario = 100

// Counts are requests per app role.
type Counts map[string]int64

// Earlier is what an earlier run of the selection sent.
type Earlier struct {
	// Basis names the earlier run (its archive folder) in messages.
	Basis string
	// Scenarios are the per-app counts of each scenario that ran.
	Scenarios map[string]Counts
	// Outside is what the run sent outside its scenarios (the live preflight's probes).
	Outside Counts
}

// Input is one check.
type Input struct {
	Selected []string // the scenarios the run will run
	Apps     []string // the target's app roles (a default estimate counts on each)
	Earlier  *Earlier // nil: no earlier run of the selection
	PerApp   int64    // the budget per app; <= 0: DefaultPerApp
	// PerScenario is the default estimate of an uncounted scenario; <= 0: DefaultPerScenario.
	PerScenario int64
}

// Verdict is the check's outcome.
type Verdict struct {
	PerApp   int64
	Estimate Counts
	// Basis says where the estimate came from, for the refusal and run.json.
	Basis string
	// Over are the apps whose estimate exceeds the budget, in name order.
	Over []string
}

// OK says whether the run fits the budget.
func (v Verdict) OK() bool { return len(v.Over) == 0 }

// Problem is the refusal's text: each app over the budget with its estimate ("" when OK).
func (v Verdict) Problem() string {
	if v.OK() {
		return ""
	}
	var apps []string
	for _, a := range v.Over {
		apps = append(apps, fmt.Sprintf("%s app %d", a, v.Estimate[a]))
	}
	return fmt.Sprintf("the run would exceed the API budget of %d requests per app: estimated %s (from %s); raise --api-budget (FLOWTEST_API_BUDGET) if the tenant's day allows it, or select fewer scenarios",
		v.PerApp, strings.Join(apps, ", "), v.Basis)
}

// Check estimates the run's requests per app and compares them with the budget.
func Check(in Input) Verdict {
	v := Verdict{PerApp: in.PerApp, Estimate: Counts{}}
	if v.PerApp <= 0 {
		v.PerApp = DefaultPerApp
	}
	per := in.PerScenario
	if per <= 0 {
		per = DefaultPerScenario
	}
	counted, uncounted := 0, 0
	for _, id := range in.Selected {
		var c Counts
		if in.Earlier != nil {
			c = in.Earlier.Scenarios[id]
		}
		if c == nil {
			uncounted++
			for _, app := range in.Apps {
				v.Estimate[app] += per
			}
			continue
		}
		counted++
		for app, n := range c {
			v.Estimate[app] += n
		}
	}
	if in.Earlier != nil {
		for app, n := range in.Earlier.Outside {
			v.Estimate[app] += n
		}
	}
	var basis []string
	if counted > 0 {
		basis = append(basis, fmt.Sprintf("the counts of %d scenarios in %s", counted, in.Earlier.Basis))
	}
	if uncounted > 0 {
		basis = append(basis, fmt.Sprintf("%d uncounted scenarios × %d per app", uncounted, per))
	}
	v.Basis = strings.Join(basis, " and ")
	if v.Basis == "" {
		v.Basis = "no scenario"
	}
	for _, app := range slices.Sorted(maps.Keys(v.Estimate)) {
		if v.Estimate[app] > v.PerApp {
			v.Over = append(v.Over, app)
		}
	}
	return v
}

// FromArchive is what an archive's records and run.json say an earlier run sent. Scenarios
// without counts (not run, or recorded before counting existed) are left out, so they get the
// default estimate.
func FromArchive(basis string, recs []*results.Scenario, run *results.Run) *Earlier {
	e := &Earlier{Basis: basis, Scenarios: map[string]Counts{}, Outside: Counts{}}
	inScenarios := Counts{}
	for _, r := range recs {
		if r.Status == results.StatusNotRun || len(r.APIRequests) == 0 {
			continue
		}
		c := Counts{}
		for app, a := range r.APIRequests {
			c[app] = a.Requests
			inScenarios[app] += a.Requests
		}
		e.Scenarios[r.ID] = c
	}
	if run != nil {
		for app, a := range run.APIRequests {
			if n := a.Requests - inScenarios[app]; n > 0 {
				e.Outside[app] = n
			}
		}
	}
	return e
}

// Record is the verdict as run.json keeps it.
func (v Verdict) Record() *results.APIBudget {
	return &results.APIBudget{PerApp: v.PerApp, Basis: v.Basis, Estimate: maps.Clone(v.Estimate)}
}
