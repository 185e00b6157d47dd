package steps

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// addOperatorSteps registers the step domains of this group, in this order.
func addOperatorSteps(reg stepdef.Registry) {
	jobLogDomain{}.register(reg)
	killDomain{}.register(reg)
	jobLockDomain{}.register(reg)
	lockConflictDomain{}.register(reg)
	statusDomain{}.register(reg)
	holdDomain{}.register(reg)
	forceUnlockDomain{}.register(reg)
	resolveDomain{}.register(reg)
	refusalDomain{}.register(reg)
	orphanDomain{}.register(reg)
	stopDomain{}.register(reg)
	jobUnlockDomain{}.register(reg)
}
