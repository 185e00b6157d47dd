// Package kit is the bottom of the step library: the scene every domain reads, the fixtures,
// named processes, the FlowNet launcher, runs, records, views, keys and snapshots. It imports
// no step group; the groups above shape the processes it starts through the launch hooks
// on its scene (scene.go), registered in their BeforeScenario.
//
//	fixturefiles.go  the steps that read a fixture file, resolved inside its folder for them and the preflight
//	fixtures.go      the network fixture and the scope it is rendered with
//	flownet.go       the one FlowNet command runner (every subcommand)
//	keys.go          the contract's canonical keys (R1, N1, S1, A1)
//	processes.go     named processes: who is "the FlowNet run", "the holder", …
//	records.go       NETWORK_RUN, NODE_STATE, NODE_ATTEMPT, RUN_INVOCATION assertions
//	runjson.go       run-network's --json line against the records it wrote
//	runs.go          FlowNet runs: start, resume, exit codes, output, identity
//	scene.go         the Suite every scenario shares, the scene, its launch hooks
//	snapshots.go     $revision snapshots of the scope's records around read-only commands
//	steps.go         the kit's step domains, in registration order
//	views.go         typed record views, decoded in one place, exact reads, small text helpers
package kit

import "github.com/ksqlflow/flowtest/internal/harness/stepdef"

// AddStepsTo registers the step domains of the kit in reg, in this order; its state is
// typed per domain (a scenario.Key each), reached only through the domain's methods.
func AddStepsTo(reg stepdef.Registry) {
	FixtureDomain{}.register(reg)
	processDomain{}.register(reg)
	runDomain{}.register(reg)
	RecordDomain{}.register(reg)
	snapshotDomain{}.register(reg)
}
