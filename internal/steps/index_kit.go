package steps

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// addKitSteps registers the step domains of this group, in this order.
func addKitSteps(reg stepdef.Registry) {
	fixtureDomain{}.register(reg)
	processDomain{}.register(reg)
	runDomain{}.register(reg)
	recordDomain{}.register(reg)
	snapshotDomain{}.register(reg)
}
