// Package operator holds the operator's side of the step library: status, holds, force-unlock,
// resolve, job unlock, orphans, stops, kill, job locks and the JOB log. It imports the kit
// and the proxies.
//
//	forceunlock.go   the operator's force-unlock-network, its audit, the outbound trap
//	holds.go         the operator's cancel-run: a stop request and its release
//	joblocks.go      kSQL-Flow job locks: inspection and operator recovery
//	joblog.go        the kSQL-Flow JOB log: correlation, one row per attempt, timing
//	jobunlocks.go    FlowNet's record-job-unlock: its RECORDED line, its audit, the JOB log left alone
//	kill.go          a RUNNING attempt and the kill of its kSQL-Flow child
//	lockconflict.go  a standalone kSQL-Flow holding a job lock while FlowNet runs
//	orphans.go       killing FlowNet (its whole tree, or the parent alone) mid-node
//	refusals.go      a FlowNet call refused with a code; what its stderr must not say
//	resolves.go      the operator's resolve-node and its ATTEMPT_RESOLUTION
//	status.go        the operator's status: readings, activity, lock, recovery identifiers
//	steps.go         the operator group's step domains, in registration order
//	stops.go         the platform's stop signal to a FlowNet run, drained or terminated
package operator

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// AddStepsTo registers the step domains of the operator group in reg, in this order; its state is
// typed per domain (a scenario.Key each), reached only through the domain's methods.
func AddStepsTo(reg stepdef.Registry) {
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
