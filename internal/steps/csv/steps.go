// Package csv holds the CSV domains: the IO root, the CSV app, exports, receipts, the wrapper,
// memory, leaks, write faults and cli-kintone. It sits beside operator and requests and
// imports only the kit and the proxies.
//
//	clikintone.go  the real cli-kintone importing an export; its output holds no token
//	csvapp.go      the CSV fixture app: rows read exactly, marker row, guarded sweep
//	csvexport.go   CSV exports: where a sink lands, old and temp files, strict decoding
//	csvfault.go    a one-shot write fault of the kSQL-Flow proxy on the CSV app (csv1-02)
//	csvio.go       the CSV IO root, CSV fixtures, the CSV input written and rewritten
//	csvleak.go     no IO root path or CSV cell in the run's state and audit records
//	csvmemory.go   the kSQL-Flow child's peak memory sampled during a CSV import
//	csvreceipt.go  input and output audit summaries; a rerun's export against the first
//	csvwrapper.go  kSQL-Flow behind flowtest's wrapper: no importCsv, Shift_JIS exports
//	steps.go       AddStepsTo, and BeforeScenario: the IO root in every FlowNet environment
package csv

import (
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// AddStepsTo registers the step domains of the CSV group in reg, in this order; its state is
// typed per domain (a scenario.Key each), reached only through the domain's methods.
func AddStepsTo(reg stepdef.Registry) {
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

// BeforeScenario gives every FlowNet command of the scope the scenario's CSV IO root, once made.
func BeforeScenario(st *scenario.State) {
	kit.SceneKey.Of(st).AddFlowNetEnv(csvIOEnv)
}
