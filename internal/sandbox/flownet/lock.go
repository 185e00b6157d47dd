package flownet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// networkLock is the renewable lease per (profile, network_id) (§3.7): a unique
// `LOCK:<N1>` NETWORK_LOCK record, renewed by revision-fenced heartbeats and released by
// rewriting it into a `LOCKDONE:` tombstone. A RUNNING lock of someone else is never taken
// over, however stale: recovery is force-unlock-network's job.
type networkLock struct {
	st                          *store
	n1, recordKey               string
	profile, networkID          string
	owner, instance, leaseToken string
	lease, heartbeat            time.Duration
	now                         func() time.Time

	mu        sync.Mutex
	id, rev   string // kintone $id / $revision we last wrote
	bizRev    int    // business revision field
	lastOK    time.Time
	failsAtOK int64 // st.transportFailures() when lastOK was set
	failures  int
	uncertain string // non-empty: why the lease can no longer be trusted
	stop      chan struct{}
	stopped   chan struct{}

	// inflight is the heartbeat under way, if any: a tick asked for while one is in flight
	// (the timer's and a write's at once) waits for it and shares its outcome instead of
	// sending a second heartbeat, as the product's lease monitor does.
	tickMu   sync.Mutex
	inflight *tickCall

	// okAt mirrors lastOK for writers that must not wait on mu (a heartbeat retrying its
	// fence read holds mu for up to an interval): the lease is ours until okAt + lease.
	okMu sync.Mutex
	okAt time.Time
}

// setOK records a confirmed lease write at t (mu held).
func (l *networkLock) setOK(t time.Time) {
	l.lastOK = t
	l.failsAtOK = l.st.transportFailures()
	l.okMu.Lock()
	l.okAt = t
	l.okMu.Unlock()
}

// deadline is when the lease runs out unless renewed: the last confirmed lease write plus
// the lease duration. No control-plane write may be sent after it (§3.7: transport retries
// are bounded by the lease; only one successful heartbeat, FINAL_WRITE_CONFIRMED, allows
// more).
func (l *networkLock) deadline() time.Time {
	l.okMu.Lock()
	defer l.okMu.Unlock()
	return l.okAt.Add(l.lease)
}

const (
	codeLockConflict    = "LOCK_CONFLICT"
	codeLockUnavailable = "LOCK_UNAVAILABLE"
	leaseFailureLimit   = 3
)

// acquireLock inserts the lock record; CB_VA01 and lost responses are adjudicated by
// reading LOCK:<N1> back.
func acquireLock(ctx context.Context, st *store, profile, networkID, owner, instance string, lease, hb time.Duration, now func() time.Time) (*networkLock, error) {
	n1, err := N1Key(profile, networkID)
	if err != nil {
		return nil, err
	}
	l := &networkLock{st: st, n1: n1, recordKey: "LOCK:" + n1, profile: profile, networkID: networkID,
		owner: owner, instance: instance, leaseToken: uuid.NewString(), lease: lease, heartbeat: hb, now: now}
	t := now()
	// Exactly the fields the product writes (product-contract §3.7): no network_id, so a
	// cleanup that works here also works on a live tenant.
	rec := vals(map[string]any{
		"record_key": l.recordKey, "record_type": "NETWORK_LOCK", "lock_key": n1, "profile": profile,
		"owner_invocation_id": owner, "lease_token": l.leaseToken,
		"started_at": isoMillis(t), "heartbeat_at": isoMillis(t), "lease_expires_at": isoMillis(t.Add(lease)),
		"status": StatusRunning, "revision": 1, "status_reason": "owner_instance_id=" + instance,
	})
	id, rev, err := st.kc.AddRecord(ctx, st.stateApp, rec)
	if err == nil {
		l.id, l.rev, l.bizRev = id, rev, 1
		l.setOK(t)
		return l, nil
	}
	if !kintoneapi.IsCode(err, "CB_VA01") && !kintoneapi.IsNetwork(err) {
		return nil, &codedError{Code: codeLockUnavailable, Msg: fmt.Sprintf("acquire network lock for %s: %v", networkID, err), Err: err}
	}
	got, rerr := st.byKey(ctx, st.stateApp, l.recordKey)
	switch {
	case rerr != nil:
		return nil, &codedError{Code: codeLockUnavailable, Msg: fmt.Sprintf("acquire network lock for %s: outcome unknown: %v", networkID, rerr), Err: err}
	case got != nil && got.Str("lease_token") == l.leaseToken && got.Str("status") == StatusRunning:
		l.id, l.rev, l.bizRev = got.ID(), got.Revision(), atoi(got.Str("revision"))
		l.setOK(t)
		return l, nil
	case got != nil && got.Str("status") == StatusRunning:
		if defect.StaleLockTakenOver { // planted defect: a stale lock of a dead owner is taken over
			if taken, ok := l.takeOverStale(ctx, got, t); ok {
				return taken, nil
			}
		}
		return nil, coded(codeLockConflict, "network %s (profile %s) is locked by invocation %s until %s",
			networkID, profile, got.Str("owner_invocation_id"), got.Str("lease_expires_at"))
	}
	return nil, &codedError{Code: codeLockUnavailable, Msg: fmt.Sprintf("acquire network lock for %s: %v", networkID, err), Err: err}
}

// takeOverStale is the planted defect's takeover (StaleLockTakenOver): a RUNNING lock whose
// lease ran out more than the DATETIME allowance ago is treated as free and rewritten to this
// owner, fenced by its $revision. The product must answer LOCK_CONFLICT instead (§8
// invariant 2): only force-unlock-network, with stop evidence, may end a stale lock.
func (l *networkLock) takeOverStale(ctx context.Context, got kintoneapi.Record, t time.Time) (*networkLock, bool) {
	exp, ok := parseTime(got.Str("lease_expires_at"))
	if !ok || !t.After(exp.Add(kintoneDatetimeAllowance*time.Second)) {
		return nil, false
	}
	biz := atoi(got.Str("revision")) + 1
	rev, err := l.st.kc.UpdateRecord(ctx, l.st.stateApp, got.ID(), vals(map[string]any{
		"owner_invocation_id": l.owner, "lease_token": l.leaseToken,
		"started_at": isoMillis(t), "heartbeat_at": isoMillis(t), "lease_expires_at": isoMillis(t.Add(l.lease)),
		"revision": biz, "status_reason": "owner_instance_id=" + l.instance,
	}), got.Revision())
	if err != nil {
		return nil, false
	}
	l.id, l.rev, l.bizRev = got.ID(), rev, biz
	l.setOK(t)
	return l, true
}

// startHeartbeat renews the lease every heartbeat interval until release: the lease
// monitor's timer. The scheduler starts it when it starts (not at the lock's acquisition) and
// also ticks before each ordinary write (tick); the timer keeps its own beat whatever those
// writes do (product-contract §3.7: "heartbeat every heartbeat_interval_sec and also before
// each ordinary write").
func (l *networkLock) startHeartbeat() {
	if l.stop != nil {
		return
	}
	l.stop, l.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.stopped)
		every := l.heartbeat
		if defect.HeartbeatOnEveryTick {
			every = 250 * time.Millisecond // the lease check's tick, not the heartbeat interval
		}
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tk.C:
				ctx, cancel := context.WithTimeout(context.Background(), l.heartbeat)
				_ = l.tick(ctx)
				cancel()
			}
		}
	}()
}

// tickCall is one heartbeat that concurrent ticks share.
type tickCall struct {
	done chan struct{}
	err  error
}

// tick is one lease-monitor tick: a heartbeat (fence read, then the revision-fenced PUT),
// or, when one is already in flight, that heartbeat's outcome. It fails without sending
// anything once the lease is uncertain. The scheduler and the CLOSE tick before each
// ordinary write and stop when it fails.
func (l *networkLock) tick(ctx context.Context) error {
	l.tickMu.Lock()
	if c := l.inflight; c != nil {
		l.tickMu.Unlock()
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return &codedError{Code: codeLockUnavailable, Msg: "heartbeat: " + ctx.Err().Error(), Err: ctx.Err()}
		}
	}
	c := &tickCall{done: make(chan struct{})}
	l.inflight = c
	l.tickMu.Unlock()
	c.err = l.renew(ctx)
	l.tickMu.Lock()
	l.inflight = nil
	l.tickMu.Unlock()
	close(c.done)
	return c.err
}

func (l *networkLock) stopHeartbeat() {
	if l.stop != nil {
		close(l.stop)
		<-l.stopped
		l.stop = nil
	}
}

// fence re-reads the lock and requires our lease token and the $revision we last wrote.
// Caller holds l.mu.
func (l *networkLock) fence(ctx context.Context) (kintoneapi.Record, error) {
	got, err := l.st.byKey(ctx, l.st.stateApp, l.recordKey)
	if err != nil {
		return nil, &codedError{Code: codeLockUnavailable, Msg: "read network lock: " + err.Error(), Err: err}
	}
	switch {
	case got == nil || got.Str("lease_token") != l.leaseToken:
		return nil, coded("LEASE_TOKEN_MISMATCH", "network lock %s is no longer ours", l.recordKey)
	case got.Revision() != l.rev:
		return nil, coded("LEASE_REVISION_MISMATCH", "network lock %s revision is %s, we wrote %s", l.recordKey, got.Revision(), l.rev)
	}
	return got, nil
}

// renew is one heartbeat: fence read, then PUT by record_key with the fenced $revision.
func (l *networkLock) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uncertain != "" {
		return coded(codeLeaseInterruptedCode, "%s", l.uncertain)
	}
	// Judged on the last confirmation before this heartbeat: a heartbeat that succeeds after
	// the lease went unconfirmed for longer than lease - interval does not make it trustworthy
	// again when kintone was unreachable meanwhile (the real product marks the lease uncertain
	// on the failed control-plane writes of such an outage; this model's reads and writes
	// retry instead, so a transport failure of any of them since the last confirmation stands
	// for it: m7-02's recovery). Judged after the heartbeat, the success would move lastOK and
	// hide the gap, and a failed timer heartbeat landing a few milliseconds before the
	// threshold would hide it too. The heartbeat itself may take the whole outage (its fence
	// read retries until kintone answers), so the gap is measured to when it was written,
	// from the confirmation before. A gap without a transport failure is only a slow answer
	// (an acquisition or heartbeat held, then confirmed, as explore's schedules do): the
	// product checks the remaining lease only after a failed heartbeat, so that is no loss.
	prev, prevFails := l.lastOK, l.failsAtOK
	err := l.renewLocked(ctx)
	unreachable := l.st.transportFailures() != prevFails
	limit := l.lease - l.heartbeat
	stale := l.now().After(prev.Add(limit)) && (err != nil || unreachable && l.lastOK.After(prev.Add(limit)))
	if err != nil {
		l.failures++
		if ce, ok := err.(*codedError); ok && ce.Code != codeLockUnavailable {
			l.uncertain = err.Error() // fence lost: never trust the lease again
		} else if l.failures >= leaseFailureLimit {
			l.uncertain = fmt.Sprintf("%d consecutive heartbeat failures: %v", l.failures, err)
		}
	} else {
		l.failures = 0
	}
	// After a success the heartbeat's own duration counts too, when kintone was unreachable
	// during it (a fence read retried through an outage).
	if l.uncertain == "" && (stale || unreachable && l.now().After(l.lastOK.Add(limit))) {
		l.uncertain = "remaining lease is not longer than the heartbeat interval"
	}
	return err
}

const codeLeaseInterruptedCode = "NETWORK_LEASE_INTERRUPTED"

func (l *networkLock) renewLocked(ctx context.Context) error {
	if _, err := l.fence(ctx); err != nil {
		return err
	}
	t := l.now()
	rec := vals(map[string]any{"heartbeat_at": isoMillis(t), "lease_expires_at": isoMillis(t.Add(l.lease)), "revision": l.bizRev + 1})
	nr, err := l.st.kc.UpdateByKey(ctx, l.st.stateApp, "record_key", l.recordKey, rec, l.rev)
	if err != nil {
		if kintoneapi.IsCode(err, "GAIA_CO02") {
			return coded("LEASE_REVISION_CONFLICT", "heartbeat of %s lost the revision race", l.recordKey)
		}
		if kintoneapi.IsNetwork(err) || kintoneapi.IsCode(err, "GAIA_DA02") {
			got, rerr := l.st.byKey(ctx, l.st.stateApp, l.recordKey)
			if rerr == nil && got != nil && got.Str("lease_token") == l.leaseToken {
				want, _ := strconv.Atoi(l.rev)
				if atoi(got.Revision()) == want+1 && atoi(got.Str("revision")) == l.bizRev+1 && !kintoneapi.IsCode(err, "GAIA_DA02") {
					l.rev, l.bizRev = got.Revision(), l.bizRev+1
					l.setOK(t)
					return nil
				}
				if got.Revision() == l.rev {
					return &codedError{Code: codeLockUnavailable, Msg: "heartbeat not written: " + err.Error(), Err: err}
				}
				return coded("LEASE_REVISION_MISMATCH", "network lock %s moved to revision %s", l.recordKey, got.Revision())
			}
		}
		return &codedError{Code: codeLockUnavailable, Msg: "heartbeat: " + err.Error(), Err: err}
	}
	l.rev, l.bizRev = nr, l.bizRev+1
	l.setOK(t)
	return nil
}

// uncertainNow says the lease is no longer trusted (see renew).
func (l *networkLock) uncertainNow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uncertain != ""
}

// confirm tries one heartbeat even when the lease is marked uncertain: success proves the
// lock is still ours, which allows the just-finished work to be closed with
// NETWORK_LEASE_INTERRUPTED (FINAL_WRITE_CONFIRMED, §3.7) instead of being left open.
func (l *networkLock) confirm(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewLocked(ctx) == nil
}

// release stops the heartbeat and rewrites the lock into its tombstone with the final
// status and reason. One retry covers our own heartbeat having advanced the revision; a lost
// response is adjudicated by reading the tombstone.
func (l *networkLock) release(ctx context.Context, status, reason string) error {
	l.stopHeartbeat()
	l.mu.Lock()
	defer l.mu.Unlock()
	tomb := lockDoneKey(l.n1, l.leaseToken)
	for try := 0; try < 2; try++ {
		if _, err := l.fence(ctx); err != nil {
			return err
		}
		rec := vals(map[string]any{
			"record_key": tomb, "lock_key": "", "owner_invocation_id": "", "lease_token": "",
			"status": status, "status_reason": reason, "finished_at": isoMillis(l.now()), "revision": l.bizRev + 1,
		})
		_, err := l.st.kc.UpdateRecord(ctx, l.st.stateApp, l.id, rec, l.rev)
		if err == nil {
			return nil
		}
		if kintoneapi.IsNetwork(err) || kintoneapi.IsCode(err, "GAIA_DA02") {
			got, rerr := l.st.byKey(ctx, l.st.stateApp, tomb)
			if rerr == nil && got != nil && got.ID() == l.id {
				return nil
			}
		}
		if !kintoneapi.IsCode(err, "GAIA_CO02") {
			return &codedError{Code: codeLockUnavailable, Msg: "release network lock: " + err.Error(), Err: err}
		}
	}
	return coded("LEASE_REVISION_CONFLICT", "release of %s kept losing the revision race", l.recordKey)
}
