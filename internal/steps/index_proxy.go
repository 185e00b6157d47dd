package steps

import (
	"context"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// addProxySteps registers the step domains of this group, in this order.
func addProxySteps(reg stepdef.Registry) {
	faultDomain{}.register(reg)
	barrierDomain{}.register(reg)
	faultTrafficDomain{}.register(reg)
	windowDomain{}.register(reg)
	selectiveFaultDomain{}.register(reg)
}

// hookProxies adds the proxy group's part to every process the kit starts: the scenario's
// kSQL-Flow proxy before the first command that can start kSQL-Flow (so every run's profile
// snapshot has its base URL and every kSQL-Flow child is counted), its config copy in every
// FlowNet environment, the fault or counting proxy of each FlowNet process, and the explore
// scheduler's watch on every child's exit.
func hookProxies(st *scenario.State) {
	sc := sceneKey.Of(st)
	sc.beforeFlowNetStarts(func(ctx context.Context, sub string) error {
		if !startsKsqlFlow[sub] {
			return nil
		}
		return ksqlProxyKey.Of(st).ensure(ctx, sc)
	})
	sc.addFlowNetEnv(func(sc *scene, _ *fixtureState) []string { return ksqlProxyEnv(sc) })
	sc.addProcessEnv(proxyEnvFor)
	sc.onChildStarted(watchExploredExit)
}
