package steps

import (
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// addCSVSteps registers the step domains of this group, in this order.
func addCSVSteps(reg stepdef.Registry) {
	csvIODomain{}.register(reg)
	csvAppDomain{}.register(reg)
	csvExportDomain{}.register(reg)
	csvReceiptDomain{}.register(reg)
	csvWrapperDomain{}.register(reg)
	csvMemoryDomain{}.register(reg)
	cliKintoneDomain{}.register(reg)
	csvLeakDomain{}.register(reg)
	csvFaultDomain{}.register(reg)
}

// hookCSVIO gives every FlowNet command of the scope the scenario's CSV IO root, once made.
func hookCSVIO(st *scenario.State) {
	sceneKey.Of(st).addFlowNetEnv(csvIOEnv)
}
