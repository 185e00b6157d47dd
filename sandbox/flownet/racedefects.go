package flownet

import (
	"context"

	"github.com/ksqlflow/flowtest/sandbox/defect"
)

// Two planted defects that no fixed-timing scenario meets: each needs an order of two
// pollers' kintone writes that ordinary timing never produces, and `flowtest explore`
// finds it (sandbox/defect/defects.yaml, `explore:`).

// lookedUpNoRunBeforeLock is the planted defect start-trusts-lookup-before-lock: a NEW-or-NOOP
// run-network looks the key's Run up before it takes the Network lock (to spare the lock
// when the answer is already known) and, when that lookup found no Run, does not look again
// inside the lock. A Run another invocation created between the two is inserted a second
// time: the R1 key refuses it and this invocation ends DUPLICATE_RECORD instead of NOOP.
// Ordinary timing never meets it: of two STARTs at once, the second's lock write comes while
// the first holds the lock (LOCK_CONFLICT); only a lock write held back past the first
// invocation's whole locked section, with the lookup before it, reaches the INSERT.
func lookedUpNoRunBeforeLock(ctx context.Context, st *store, profile, networkID string, o runOptions, key DerivedKey) bool {
	if !defect.StartTrustsLookupBeforeLock || o.resume || o.resumeRun != "" || o.rerunFrom != "" {
		return false
	}
	r1, err := R1Key(profile, networkID, key.BusinessKey)
	if err != nil {
		return false
	}
	run, err := (&execution{st: st}).findRun(ctx, "", r1)
	return err == nil && run == nil
}

// startAnswer is what the poller answered a START it ran in this cycle.
type startAnswer struct{ state, code, msg string }

// coalescedStart is the planted defect start-coalesced-in-cycle: the poller remembers the
// STARTs it ran in this cycle by network and business key, and answers a later START of
// the same key with the first one's outcome instead of running run-network again, which
// would have answered DONE / NOOP_ALREADY_SUCCESS naming the Run. Ordinary timing never
// meets it: of two pollers started together, each claims one of two STARTs of a key; only
// a poller that runs the first START to its end before the other poller's claims land gets
// to claim the second too.
func (p *poller) coalescedStart(key string) (startAnswer, bool) {
	if !defect.StartCoalescedInCycle {
		return startAnswer{}, false
	}
	a, ok := p.startedThisCycle[key]
	return a, ok
}

func (p *poller) rememberStart(key string, a startAnswer) {
	if !defect.StartCoalescedInCycle {
		return
	}
	if p.startedThisCycle == nil {
		p.startedThisCycle = map[string]startAnswer{}
	}
	p.startedThisCycle[key] = a
}
