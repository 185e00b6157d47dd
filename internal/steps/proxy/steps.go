// Package proxy holds the proxies between FlowNet and kintone and what acts in them: fault
// proxies and their modes, barriers, selective faults, the traffic they logged, the counting
// and kSQL-Flow proxies, the explore scheduler's gate. It imports only the kit.
//
//	apiproxy.go         the options and CA every proxy shares; a counting proxy for each FlowNet process without a fault proxy
//	barriers.go         barriers in those proxies: a request held, waited for, released by name
//	explore.go          an explored run: the scheduler's gate on the named processes' proxies
//	faults.go           a fault proxy per named FlowNet process: modes and outages
//	faulttraffic.go     what a process sent through its fault proxy: call budgets, heartbeats, no write after its lease
//	ksqlprofile.go      the kSQL-Flow profile from describe-profile; a proxy's proven config copy
//	ksqlproxy.go        the scenario's kSQL-Flow proxy: every kSQL-Flow process reaches kintone through it, counted
//	selectivefaults.go  selective faults in those proxies: respond, lose-response, reset, delay
//	steps.go            AddStepsTo, and BeforeScenario: the proxies, their environment and the explore watch on every process the kit starts
//	windows.go          windows held by a barrier in the scenario's kSQL-Flow proxy
package proxy

import (
	"context"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// AddStepsTo registers the step domains of the proxy group in reg, in this order; its state is
// typed per domain (a scenario.Key each), reached only through the domain's methods.
func AddStepsTo(reg stepdef.Registry) {
	faultDomain{}.register(reg)
	barrierDomain{}.register(reg)
	faultTrafficDomain{}.register(reg)
	windowDomain{}.register(reg)
	selectiveFaultDomain{}.register(reg)
}

// BeforeScenario adds the proxy group's part to every process the kit starts: the scenario's
// kSQL-Flow proxy before the first command that can start kSQL-Flow (so every run's profile
// snapshot has its base URL and every kSQL-Flow child is counted), its config copy in every
// FlowNet environment, the fault or counting proxy of each FlowNet process, and the explore
// scheduler's watch on every child's exit.
func BeforeScenario(st *scenario.State) {
	sc := kit.SceneKey.Of(st)
	sc.BeforeFlowNetStarts(func(ctx context.Context, sub string) error {
		if !startsKsqlFlow[sub] {
			return nil
		}
		return KsqlProxyKey.Of(st).Ensure(ctx, sc)
	})
	sc.AddFlowNetEnv(func(sc *kit.Scene, _ *kit.FixtureState) []string { return ksqlProxyEnv(sc) })
	sc.AddProcessEnv(proxyEnvFor)
	sc.OnChildStarted(WatchExploredExit)
}
