// Package requests holds operation requests and what drives them: pollers, starts, the request
// lifecycle, the requester, the orders only barriers build and the races. It imports the
// kit, the proxies and the operator group.
//
//	closerace.go  a CLOSE and a resume of one Run in a free race: which order the Network lock let happen
//	closerows.go  what one CLOSE left, by §1.9's rows: its JSON union, audit and lock
//	lifecycle.go  the request lifecycle: requester's cancel, CLOSE, archive-run, arrivals
//	losers.go     one Node State two writers race for: noted, then exactly one write
//	orders.go     orders only barriers build: background STOP and CLOSE, the hold record, the three-way order
//	pollers.go    poll-requests as named processes: allow-list, timing, counters
//	requester.go  the requester as a named background party: its cancel through its own proxy, the race it runs
//	requests.go   operation requests: made through the write guard, read back, swept
//	starts.go     START expectations: 案件管理 read independently, as_of, JOB log as_of
//	steps.go      the request group's step domains, in registration order
package requests

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// AddStepsTo registers the step domains of the request group in reg, in this order; its state is
// typed per domain (a scenario.Key each), reached only through the domain's methods.
func AddStepsTo(reg stepdef.Registry) {
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
