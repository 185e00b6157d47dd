package steps

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// addRequestSteps registers the step domains of this group, in this order.
func addRequestSteps(reg stepdef.Registry) {
	requestDomain{}.register(reg)
	pollerDomain{}.register(reg)
	startDomain{}.register(reg)
	lifecycleDomain{}.register(reg)
	requesterDomain{}.register(reg)
	orderDomain{}.register(reg)
	closeRaceDomain{}.register(reg)
	closeRowDomain{}.register(reg)
	loserDomain{}.register(reg)
}
