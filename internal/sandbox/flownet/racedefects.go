package flownet

import (
	"context"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Planted defects that no fixed-timing scenario meets: each needs an order of two
// processes' kintone writes that ordinary timing never produces, and `flowtest explore`
// finds it (internal/sandbox/defect/defects.yaml, `explore:`).

// lookedUp is what run-network looked up before the Network lock and, by a planted defect,
// trusts inside it: noRun (start-trusts-lookup-before-lock), archivedChecked
// (resume-checks-archived-before-lock).
type lookedUp struct{ noRun, archivedChecked bool }

func lookedUpBeforeLock(ctx context.Context, st *store, profile, networkID string, o runOptions, key DerivedKey) (lookedUp, error) {
	checked, err := checkedArchivedBeforeLock(ctx, st, o)
	return lookedUp{noRun: lookedUpNoRunBeforeLock(ctx, st, profile, networkID, o, key), archivedChecked: checked}, err
}

// checkedArchivedBeforeLock is the planted defect resume-checks-archived-before-lock: a
// --resume-run reads its Run before taking the Network lock, to refuse an ARCHIVED one
// (RUN_NOT_RESUMABLE) without locking the network, and does not check the lifecycle again
// inside the lock. A CLOSE whose whole locked section (its lock, the ARCHIVED write, the
// release) lands between that read and the resume's lock write leaves an ARCHIVED Run the
// resume then runs: an attempt after the close. Ordinary timing never meets it: between the
// read and the lock write there is no time for a CLOSE's six requests; the CLOSE either came
// first (the read sees ARCHIVED) or holds the lock at the resume's lock write (LOCK_CONFLICT).
// What is left is that of a resume that ran to its end before the CLOSE: only the order of
// the writes shows the bug. A Run that cannot be read here is left to the check in the lock.
func checkedArchivedBeforeLock(ctx context.Context, st *store, o runOptions) (bool, error) {
	if !defect.ResumeChecksArchivedBeforeLock || o.resumeRun == "" {
		return false, nil
	}
	run, err := findRunByID(ctx, st, o.resumeRun)
	if err != nil || run == nil {
		return false, nil
	}
	if run.Str("lifecycle_status") == "ARCHIVED" {
		return true, coded("RUN_NOT_RESUMABLE", "Run %s is not resumable (lifecycle_status=%s, resume_allowed=%s)", o.resumeRun, run.Str("lifecycle_status"), run.Str("resume_allowed"))
	}
	return true, nil
}

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
