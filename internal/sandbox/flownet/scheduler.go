package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// execution is one Invocation against one Run: admission state plus the sequential
// scheduler (§1.3.2). Every write is revision-fenced against what this Invocation last saw.
type execution struct {
	c       *cli
	st      *store
	kf      *ksqlFlow
	lock    *networkLock
	caps    *Capabilities
	profile string

	runID, runRev string
	run           kintoneapi.Record
	net           *Network          // the bundled definition, never the working copy
	wc            *Network          // the working copy this call was given (admission only)
	sql           map[string]string // node id -> extracted SQL path
	order         []string
	asOf          string
	mode          string
	rerunSet      map[string]bool

	invID, invRecID, invRev string
	invReason               string

	states   map[string]*nodeState
	attempts map[string][]*attemptRec // node id -> attempts

	brakeNodes          []string
	notes               []string // appended to the Invocation reason at close (after invsets.go's notes)
	invSelected         []string // the selected_node_ids the Invocation was created with
	sets                invSets  // the node sets and reason notes the close writes (invsets.go)
	finalWriteConfirmed bool
	timeout             time.Duration
	// beforeLock: what two planted defects looked up before the lock and admission trusts
	// (racedefects.go).
	beforeLock lookedUp
}

type nodeState struct {
	node      Node
	key       string // its record_key (STATE:<S1>): FlowNet updates it by updateKey
	rev       string // kintone $revision
	bizRev    int    // business revision field
	status    string
	reason    string
	latestNo  int
	active    string
	blockedBy []string
}

type attemptRec struct {
	key, rev     string // key is its record_key (ATT:<id>): FlowNet updates it by updateKey
	id           string
	no           int
	status, code string
	invocationID string
	executionID  string
}

// allowedTransitions is the repository guard of §3.2 (resolution-only moves excluded).
var allowedTransitions = map[string][]string{
	StatusWaiting:   {StatusWaiting, StatusRunning, StatusBlocked},
	StatusRunning:   {StatusRunning, StatusWaiting, StatusSuccess, StatusFailed, StatusCancelled, StatusUnknown},
	StatusSuccess:   {StatusSuccess, StatusWaiting},
	StatusFailed:    {StatusFailed, StatusWaiting},
	StatusBlocked:   {StatusBlocked, StatusWaiting},
	StatusCancelled: {StatusCancelled, StatusWaiting},
	StatusUnknown:   {StatusUnknown},
	StatusSkipped:   {StatusSkipped},
}

func transitionAllowed(ns *nodeState, to string) bool {
	if (ns.status == StatusFailed || ns.status == StatusCancelled) && to == StatusWaiting && !ns.node.Idempotent {
		return false
	}
	for _, s := range allowedTransitions[ns.status] {
		if s == to {
			return true
		}
	}
	return false
}

// loadStates reads the Run's Node States and creates the missing ones (WAITING, revision 1):
// this also completes a NEW that stopped after the Run insert.
func (e *execution) loadStates(ctx context.Context) error {
	recs, err := e.st.findExact(ctx, e.st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(e.runID)+`)`, "run_id", e.runID)
	if err != nil {
		return err
	}
	e.states = map[string]*nodeState{}
	byNode := map[string]kintoneapi.Record{}
	for _, r := range recs {
		if _, dup := byNode[r.Str("node_id")]; dup {
			return coded("NODE_STATE_NOT_UNIQUE", "Run %s has more than one Node State for %s", e.runID, r.Str("node_id"))
		}
		byNode[r.Str("node_id")] = r
	}
	for _, id := range e.order {
		nd := *e.net.Node(id)
		if defect.ResumeForgetsNonIdempotent && e.mode != "NEW" {
			nd.Idempotent = true // planted defect: a resume reads every node as idempotent
		}
		r, ok := byNode[id]
		if !ok {
			s1, err := S1Key(e.runID, id)
			if err != nil {
				return err
			}
			now := isoMillis(e.c.now())
			rec := vals(map[string]any{
				"record_type": "NODE_STATE", "run_id": e.runID, "node_state_id": "nodestate_" + uuid.NewString(),
				"node_state_key": s1, "node_id": id, "job_id": nd.JobID, "status": StatusWaiting,
				"idempotent": strconv.FormatBool(nd.Idempotent), "trigger_rule": "all_success",
				"latest_attempt_no": 0, "revision": 1, "blocked_by": "[]", "updated_at": now,
			})
			// Ours only with our node_state_id: another writer's Node State for the same node
			// (a concurrent insert of the same key) has the same run_id and node_id, and
			// taking it for ours would hide the conflict (it must be DUPLICATE_RECORD).
			_, rev, err := e.st.insert(ctx, e.st.stateApp, "STATE:"+s1, rec, "node_state_id")
			if err != nil {
				return fmt.Errorf("create Node State %s: %w", id, err)
			}
			e.states[id] = &nodeState{node: nd, key: "STATE:" + s1, rev: rev, bizRev: 1, status: StatusWaiting}
			continue
		}
		e.states[id] = &nodeState{node: nd, key: r.Str("record_key"), rev: r.Revision(), bizRev: atoi(r.Str("revision")),
			status: r.Str("status"), reason: r.Str("status_reason"), latestNo: atoi(r.Str("latest_attempt_no")),
			active: r.Str("active_attempt_id"), blockedBy: jsonList(r.Str("blocked_by"))}
	}
	return nil
}

// createInvocation inserts the RUN_INVOCATION record (RUNNING / PENDING).
func (e *execution) createInvocation(ctx context.Context, reason string, selected, preserved, blocked []string) error {
	e.invReason, e.invSelected = reason, selected
	rec := vals(map[string]any{
		"record_type": "RUN_INVOCATION", "run_id": e.runID, "invocation_id": e.invID, "mode": e.mode,
		"status": StatusRunning, "result_code": CodePending, "requested_by": e.c.requestedBy(), "host": e.c.host(),
		"started_at": isoMillis(e.c.now()), "reason": reason,
		"selected_node_ids": jsonArray(selected), "preserved_node_ids": jsonArray(preserved), "blocked_node_ids": jsonArray(blocked),
	})
	if defect.InvocationHostIgnoresEnv { // planted defect: the OS host name, KSQL_FLOWNET_HOST ignored
		h, _ := os.Hostname()
		rec["host"] = kintoneapi.Field{Value: h}
	}
	id, rev, err := e.st.insert(ctx, e.st.auditApp, "INV:"+e.invID, rec, "invocation_id")
	if defect.ExtraInvocation && e.mode == "NEW" && err == nil {
		_, _, err = e.st.insert(ctx, e.st.auditApp, "INV:"+e.invID+":retry", rec, "invocation_id") // planted defect: a blind resend under its own key, never adjudicated against the first
	}
	if err != nil {
		return fmt.Errorf("create Invocation %s: %w", e.invID, err)
	}
	e.invRecID, e.invRev = id, rev
	return nil
}

func (e *execution) finishInvocation(ctx context.Context, status, code string) error {
	reason := e.invReason
	if note := e.closeNote(); note != "" {
		reason += "; " + note
	}
	rec := vals(map[string]any{"status": status, "result_code": code, "finished_at": isoMillis(e.c.now()), "reason": reason})
	if e.sets.started {
		// The scheduler's sets replace the ones admission foresaw (invsets.go).
		rec["selected_node_ids"] = kintoneapi.Field{Value: jsonArray(e.sets.sel.list())}
		rec["preserved_node_ids"] = kintoneapi.Field{Value: jsonArray(e.sets.pres.list())}
		rec["blocked_node_ids"] = kintoneapi.Field{Value: jsonArray(e.sets.bl.list())}
	}
	rev, err := e.st.update(ctx, e.st.auditApp, "INV:"+e.invID, rec, e.invRev)
	if err != nil {
		return fmt.Errorf("finalise Invocation %s: %w", e.invID, err)
	}
	e.invRev = rev
	return nil
}

// putState writes a Node State change, fenced by the $revision we last saw and bumping the
// business revision alongside.
func (e *execution) putState(ctx context.Context, ns *nodeState, to string, fields map[string]any) error {
	if !transitionAllowed(ns, to) {
		return coded("INVALID_STATE_TRANSITION", "node %s: %s -> %s is not allowed", ns.node.ID, ns.status, to)
	}
	fields["status"] = to
	if _, set := fields["active_attempt_id"]; !set && to != StatusRunning {
		// Only a RUNNING Node State names an active Attempt: every other write clears it, as
		// the real FlowNet does (a terminal node's Attempt is found by latest_attempt_no).
		fields["active_attempt_id"] = ""
	}
	fields["revision"] = ns.bizRev + 1
	fields["updated_at"] = isoMillis(e.c.now())
	fence := ns.rev
	if defect.NodeStateWithoutRevision {
		fence = "" // planted defect: the Node State PUT carries no revision, so it cannot lose
	}
	rev, err := e.st.update(ctx, e.st.stateApp, ns.key, vals(fields), fence)
	if err != nil {
		return fmt.Errorf("update Node State %s: %w", ns.node.ID, err)
	}
	ns.rev, ns.bizRev, ns.status = rev, ns.bizRev+1, to
	if v, ok := fields["status_reason"]; ok {
		ns.reason, _ = v.(string)
	}
	if v, ok := fields["latest_attempt_no"]; ok {
		ns.latestNo = v.(int)
	}
	if v, ok := fields["active_attempt_id"]; ok {
		ns.active, _ = v.(string)
	}
	if v, ok := fields["blocked_by"]; ok {
		ns.blockedBy = jsonList(v.(string))
	}
	return nil
}

// updateRun recomputes the aggregate and writes it when it changed (§3.1).
func (e *execution) updateRun(ctx context.Context, startNow bool) (string, error) {
	return e.updateRunWith(ctx, startNow, false)
}

// writeAggregate recomputes the aggregate and writes it even when it is unchanged: the real
// FlowNet 1.0.0 PUTs the Run after every node it settles (executed or BLOCKED) and once more
// when the scheduler ends, so the Run's $revision (which audits record, e.g. RUN_ARCHIVED's
// run_revision_before) counts those writes.
func (e *execution) writeAggregate(ctx context.Context) (string, error) {
	return e.updateRunWith(ctx, false, true)
}

func (e *execution) updateRunWith(ctx context.Context, startNow, always bool) (string, error) {
	var statuses []string
	for _, id := range e.order {
		statuses = append(statuses, e.states[id].status)
	}
	started := e.run.Str("started_at") != "" || startNow
	agg := Aggregate(statuses, started)
	fields := map[string]any{}
	if startNow && e.run.Str("started_at") == "" {
		fields["started_at"] = isoMillis(e.c.now())
	}
	if agg != e.run.Str("status") {
		fields["status"] = agg
	}
	fin := e.run.Str("finished_at")
	if IsTerminalRun(agg) && fin == "" {
		fields["finished_at"] = isoMillis(e.c.now())
	} else if !IsTerminalRun(agg) && fin != "" {
		fields["finished_at"] = ""
	}
	if len(fields) == 0 && !always {
		return agg, nil
	}
	fields["status"] = agg
	fields["updated_at"] = isoMillis(e.c.now())
	rev, err := e.st.update(ctx, e.st.stateApp, e.run.Str("record_key"), vals(fields), e.runRev)
	if err != nil {
		return "", fmt.Errorf("update Run %s: %w", e.runID, err)
	}
	e.runRev = rev
	for k, v := range fields {
		e.run[k] = kintoneapi.Field{Value: v}
	}
	return agg, nil
}

func (e *execution) loadAttempts(ctx context.Context) error {
	recs, err := e.st.findExact(ctx, e.st.auditApp, `record_type in ("NODE_ATTEMPT") and run_id in (`+q(e.runID)+`)`, "run_id", e.runID)
	if err != nil {
		return err
	}
	e.attempts = map[string][]*attemptRec{}
	for _, r := range recs {
		a := &attemptRec{key: r.Str("record_key"), rev: r.Revision(), id: r.Str("node_attempt_id"), no: atoi(r.Str("attempt_no")),
			status: r.Str("status"), code: r.Str("result_code"), invocationID: r.Str("invocation_id"),
			executionID: r.Str("execution_id")}
		e.attempts[r.Str("node_id")] = append(e.attempts[r.Str("node_id")], a)
	}
	return nil
}

func (e *execution) attempt(nodeID, id string) *attemptRec {
	for _, a := range e.attempts[nodeID] {
		if a.id == id {
			return a
		}
	}
	return nil
}

// schedule runs the Invocation: orphan adjudication and resume preparation, then one node at
// a time in stable topological order. It returns the Run aggregate and the Invocation's final
// status and code.
func (e *execution) schedule(ctx context.Context) (agg, status, code string, err error) {
	// The lease monitor starts with the scheduler; from here on it also ticks before each
	// ordinary write (writeTick, aggregateTick).
	e.lock.startHeartbeat()
	if err := e.prepareSchedule(ctx); err != nil {
		return "", "", "", err
	}
	if d, derr := e.kf.describeTimeout(); derr == nil {
		e.timeout = d
	}
	excluded := e.startSets()
	for _, id := range e.order {
		ns := e.states[id]
		if ns.status != StatusWaiting {
			e.settledNode(ns, excluded)
			continue
		}
		failedDeps, deferred := e.upstreamOf(ns)
		if defect.DownstreamNotBlocked && len(failedDeps) > 0 {
			continue // planted defect: a failed upstream only skips the node; it stays WAITING
		}
		if len(failedDeps) > 0 {
			if err := e.blockNode(ctx, id, ns, failedDeps); err != nil {
				return "", "", "", err
			}
			continue
		}
		e.sets.sel.add(id) // to start, or deferred behind a pending upstream
		if deferred {
			continue
		}
		if stop, err := e.checkHold(ctx); err != nil {
			return "", "", "", err
		} else if stop {
			e.sets.holdNote = "cancel request CANCEL:" + e.runID + " accepted"
			agg, err := e.updateRun(ctx, false)
			return agg, StatusCancelled, CodeStopRequested, err
		}
		if err := e.lock.tick(ctx); err != nil && !defect.NextNodeDespiteLostLease {
			return "", "", "", e.leaseLost(ctx, err)
		}
		if err := e.runNode(ctx, ns); err != nil {
			return "", "", "", err
		}
		if defect.IndependentBranchSkipped && (ns.status == StatusFailed || ns.status == StatusUnknown) {
			break // planted defect: fail-fast; the independent branch is never started
		}
	}
	agg, err = e.aggregateAfterTick(ctx, false)
	if err != nil {
		return "", "", "", err
	}
	status, code = InvocationFinal(agg)
	return agg, status, e.finalCode(status, code), nil
}

// prepareSchedule readies the Run for the node loop: a Run that never started is marked
// RUNNING, the attempts loaded and, unless NEW, orphans adjudicated and other Invocations
// finalized; then a RESUME's or RERUN_FROM's nodes are reset.
func (e *execution) prepareSchedule(ctx context.Context) error {
	if e.run.Str("started_at") == "" {
		// A Run that never started is marked RUNNING first, under its own tick.
		if err := e.writeTick(ctx); err != nil {
			return err
		}
		if _, err := e.updateRun(ctx, true); err != nil {
			return err
		}
	}
	if err := e.loadAttempts(ctx); err != nil {
		return err
	}
	if e.mode != "NEW" {
		if err := e.adjudicateOrphans(ctx); err != nil {
			return err
		}
		if err := e.finalizeOtherInvocations(ctx); err != nil {
			return err
		}
	}
	switch e.mode {
	case "RESUME":
		if err := e.prepareResumeStates(ctx); err != nil {
			return err
		}
	case "RERUN_FROM":
		if err := e.resetRerunNodes(ctx); err != nil {
			return err
		}
	}
	return nil
}

// resetRerunNodes puts every node of the rerun set back to WAITING, one tick per write.
func (e *execution) resetRerunNodes(ctx context.Context) error {
	for _, id := range e.order {
		ns := e.states[id]
		if e.rerunSet[id] && ns.status != StatusWaiting {
			if err := e.writeTick(ctx); err != nil {
				return err
			}
			if err := e.putState(ctx, ns, StatusWaiting, map[string]any{"status_reason": "", "blocked_by": "[]", "active_attempt_id": "", "started_at": "", "finished_at": ""}); err != nil {
				return err
			}
		}
	}
	return nil
}

// upstreamOf sorts a WAITING node's dependencies: those that failed (the node is to be
// BLOCKED) and whether any is still pending (the node is deferred).
func (e *execution) upstreamOf(ns *nodeState) (failedDeps []string, deferred bool) {
	for _, d := range ns.node.DependsOn {
		switch e.states[d].status {
		case StatusFailed, StatusBlocked, StatusCancelled, StatusUnknown:
			failedDeps = append(failedDeps, d)
		case StatusWaiting, StatusRunning:
			deferred = true
		}
	}
	return failedDeps, deferred
}

// blockNode settles a node whose upstream failed as BLOCKED, naming that upstream.
func (e *execution) blockNode(ctx context.Context, id string, ns *nodeState, failedDeps []string) error {
	blockedBy := jsonArray(failedDeps)
	if defect.BlockedByMissing {
		blockedBy = "[]" // planted defect: BLOCKED without naming the upstream
	}
	// BLOCKED carries finished_at like the other settled states (a "safe graph" has no
	// settled node without one); it is cleared again when a resume resets the node.
	if err := e.writeTick(ctx); err != nil {
		return err
	}
	if err := e.putState(ctx, ns, StatusBlocked, map[string]any{"blocked_by": blockedBy, "status_reason": CodeAllSuccessNotMet, "finished_at": isoMillis(e.c.now())}); err != nil {
		return err
	}
	e.sets.bl.add(id)
	if _, err := e.aggregateAfterTick(ctx, false); err != nil {
		return err
	}
	return nil
}

// leaseLost stops the scheduler when the lease can no longer be trusted. One successful
// heartbeat confirms the final write: the Invocation is then closed CANCELLED /
// NETWORK_LEASE_INTERRUPTED; otherwise it is left untouched for the next resume to settle.
func (e *execution) leaseLost(ctx context.Context, cause error) error {
	stopped := &codedError{Code: codeLeaseInterruptedCode, Msg: cause.Error(), Err: cause}
	e.lock.stopHeartbeat()
	if e.lock.confirm(ctx) {
		e.finalWriteConfirmed = true
	}
	return stopped
}

// writeTick is the lease monitor's tick before an ordinary write (a heartbeat, §3.7); when
// it fails the scheduler stops (leaseLost).
func (e *execution) writeTick(ctx context.Context) error {
	if err := e.lock.tick(ctx); err != nil {
		return e.leaseLost(ctx, err)
	}
	return nil
}

// aggregateAfterTick writes the Run aggregate after the lease monitor's tick. When the tick
// fails, the scheduler stops; if one heartbeat still confirms the lock (FINAL_WRITE_CONFIRMED)
// the aggregate of the just-finished node is written first, and the stop is an ordinary
// close with NETWORK_LEASE_INTERRUPTED. afterNode: the tick after a node, which the planted
// defect next-node-despite-lost-lease ignores, as it ignores the one before the next node.
//
// A tick that succeeds but finds the lease went unconfirmed too long (lock.uncertainNow)
// is the real FlowNet's FINAL_WRITE_CONFIRMED state: a heartbeat after an uncertain lease
// confirmed the lock, and the product's scheduler then stops right after this node's
// aggregate, before it looks at the next node (so the next node is never selected: m7-02's
// closed Invocation names only the node that ran).
func (e *execution) aggregateAfterTick(ctx context.Context, afterNode bool) (string, error) {
	err := e.lock.tick(ctx)
	var stop error
	switch {
	case afterNode && defect.NextNodeDespiteLostLease:
	case err != nil:
		if stop = e.leaseLost(ctx, err); !e.finalWriteConfirmed {
			return "", stop
		}
	case e.lock.uncertainNow():
		// The tick's heartbeat was the confirmation: no second one (leaseLost would send it).
		e.lock.stopHeartbeat()
		e.finalWriteConfirmed = true
		stop = coded(codeLeaseInterruptedCode, "the lease was confirmed only after it went unconfirmed for longer than the lease less one heartbeat interval")
	}
	agg, err := e.writeAggregate(ctx)
	if err != nil || stop == nil {
		return agg, err
	}
	return "", stop
}

// describeTimeout is the per-run timeout from describe-profile's limits.batchTimeoutSec.
func (k *ksqlFlow) describeTimeout() (time.Duration, error) {
	if k.batchTimeoutSec <= 0 {
		return 0, fmt.Errorf("no batch timeout")
	}
	return time.Duration(k.batchTimeoutSec * float64(time.Second)), nil
}

// prepareResumeStates: BLOCKED → WAITING; idempotent FAILED/CANCELLED → WAITING unless the
// retry brake fires; UNKNOWN and non-idempotent FAILED/CANCELLED stay as excluded roots.
func (e *execution) prepareResumeStates(ctx context.Context) error {
	for _, id := range e.order {
		ns := e.states[id]
		switch {
		case defect.ResumeRerunsSuccess && ns.status == StatusSuccess:
			// planted defect: a resume resets every settled node, SUCCESS included
			if err := e.writeTick(ctx); err != nil {
				return err
			}
			if err := e.putState(ctx, ns, StatusWaiting, map[string]any{"status_reason": "", "started_at": "", "finished_at": ""}); err != nil {
				return err
			}
		case ns.status == StatusBlocked:
			if err := e.writeTick(ctx); err != nil {
				return err
			}
			if err := e.putState(ctx, ns, StatusWaiting, map[string]any{"blocked_by": "[]", "status_reason": "", "finished_at": ""}); err != nil {
				return err
			}
		case (ns.status == StatusFailed || ns.status == StatusCancelled) && ns.node.Idempotent:
			var sums []AttemptSummary
			for _, a := range e.attempts[id] {
				sums = append(sums, AttemptSummary{a.no, a.status, a.code})
			}
			if c, n, fires := RetryBrake(sums); fires {
				reason := RetryBrakeReason(c, n)
				e.brakeNodes = append(e.brakeNodes, id)
				e.sets.brakeReasons = append(e.sets.brakeReasons, reason)
				if ns.reason != reason {
					if err := e.writeTick(ctx); err != nil {
						return err
					}
					if err := e.putState(ctx, ns, ns.status, map[string]any{"status_reason": reason}); err != nil {
						return err
					}
				}
				continue
			}
			if err := e.writeTick(ctx); err != nil {
				return err
			}
			if err := e.putState(ctx, ns, StatusWaiting, map[string]any{"status_reason": "", "blocked_by": "[]", "started_at": "", "finished_at": ""}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHold reads the Run's hold before a node starts; a REQUESTED hold is accepted.
func (e *execution) checkHold(ctx context.Context) (bool, error) {
	if defect.StopIgnoredAtNodeBoundary {
		return false, nil // planted defect: the hold is never read, so a STOP never stops anything
	}
	state, rec, err := e.holdState(ctx, e.runID)
	if err != nil {
		return false, err
	}
	switch state {
	case "REQUESTED":
		var h map[string]any
		_ = json.Unmarshal([]byte(rec.Str("status_reason")), &h)
		h["state"] = "ACCEPTED"
		h["accepted_at"] = isoMillis(e.c.now())
		b, _ := json.Marshal(h)
		if _, err := e.st.update(ctx, e.st.stateApp, rec.Str("record_key"), vals(map[string]any{"status_reason": string(b)}), rec.Revision()); err != nil {
			return false, fmt.Errorf("accept hold of Run %s: %w", e.runID, err)
		}
		return true, nil
	case "ACCEPTED":
		return true, nil
	}
	return false, nil
}

// pollHoldWhileRunning reads the hold every 250 ms until the returned stop is called: only
// the planted defect hold-polled-during-node uses it (the contract reads the hold once, before
// a node starts, and never interrupts running SQL, so polling it buys nothing).
func (e *execution) pollHoldWhileRunning(ctx context.Context) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				_, _, _ = e.holdState(ctx, e.runID)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// runNode executes one node: Attempt (RUNNING/PENDING) → Node State RUNNING → Attempt
// execution_started_at → kSQL-Flow → Attempt terminal → Node State terminal → Run aggregate.
//
// The Run is not written when a node starts (the real FlowNet marks it RUNNING once, when the
// scheduler starts a Run that never started, and otherwise recomputes it after the node).
func (e *execution) runNode(ctx context.Context, ns *nodeState) error {
	att, err := e.startAttempt(ctx, ns)
	if err != nil {
		return err
	}
	attemptID := att.id
	// CSV inputs (io.go): path rules and baselines, before the start marker.
	inputs, err := e.prepareInputs(ns.node)
	var outputs []nodeOutput
	if err == nil {
		outputs, err = e.prepareOutputs(ns.node)
	}
	if err != nil {
		if c := errCode(err, ""); c == codeInputPathRejected || c == codeInputFileMissing || c == codeOutputPathRejected {
			return e.failBeforeStart(ctx, ns, att, err)
		}
		return err
	}
	if len(inputs) > 0 {
		if err := e.recordInputBaseline(ctx, att, inputs); err != nil {
			return err
		}
	}
	// The FlowNet start marker: from here on, a missing result means the SQL may have run.
	if att.rev, err = e.st.update(ctx, e.st.auditApp, att.key, vals(map[string]any{"execution_started_at": isoMillis(e.c.now())}), att.rev); err != nil {
		return fmt.Errorf("mark Attempt %s started: %w", attemptID, err)
	}

	if defect.HoldPolledDuringNode {
		defer e.pollHoldWhileRunning(ctx)() // planted defect: the hold is watched on a quarter-second tick while the node runs
	}
	rr := e.kf.run(ctx, runSpec{SQLPath: e.sql[ns.node.ID], AsOf: e.asOf, RunID: e.runID, AttemptID: attemptID, JobID: ns.node.JobID, Timeout: e.timeout, Extra: append(inputArgs(inputs), outputArgs(outputs)...)})

	jl, jlErr := e.jobLog(ctx, attemptID)
	obs := observe(rr, e.runID, attemptID, ns.node.JobID, jlErr != nil || (jl != nil && jl.Str("runner_execution_started_at") != ""))
	out := MapOutcome(obs)

	fields := e.attemptResultFields(rr, obs, out, jl)
	if out, err = e.settleIO(inputs, outputs, rr, obs, out, fields); err != nil { // io.go: receipts and the IO audit summary
		return err
	}
	return e.finishNode(ctx, ns, att, out, fields)
}

// startAttempt inserts the node's next Attempt (RUNNING/PENDING, numbered after every one
// before it) and marks the Node State RUNNING with it.
func (e *execution) startAttempt(ctx context.Context, ns *nodeState) (*attemptRec, error) {
	no := ns.latestNo
	for _, a := range e.attempts[ns.node.ID] {
		if a.no > no {
			no = a.no
		}
	}
	no++
	attemptID := "attempt_" + uuid.NewString()
	if defect.ResumeRestartsAttemptNo && e.mode == "RESUME" {
		for _, a := range e.attempts[ns.node.ID] {
			if a.no == ns.latestNo {
				attemptID = a.id // planted defect: the retry reuses the id of the node's latest Attempt; the insert adjudicates onto that old Attempt
			}
		}
	}
	a1, err := A1Key(e.runID, ns.node.ID, int64(no))
	if err != nil {
		return nil, err
	}
	rec := vals(map[string]any{
		"record_type": "NODE_ATTEMPT", "run_id": e.runID, "invocation_id": e.invID, "node_attempt_id": attemptID,
		"attempt_key": a1, "node_id": ns.node.ID, "job_id": ns.node.JobID, "attempt_no": no,
		"status": StatusRunning, "result_code": CodePending, "state_revision_before": ns.bizRev,
		// Counts start at 0 (the real FlowNet's createAttempt): an attempt finalised without
		// a result keeps them, it never leaves them empty.
		"read_count": 0, "written_count": 0,
	})
	_, rev, err := e.st.insert(ctx, e.st.auditApp, "ATT:"+attemptID, rec, "node_attempt_id")
	if err != nil {
		return nil, fmt.Errorf("create Attempt %d of %s: %w", no, ns.node.ID, err)
	}
	att := &attemptRec{key: "ATT:" + attemptID, rev: rev, id: attemptID, no: no, status: StatusRunning, code: CodePending, invocationID: e.invID}
	e.attempts[ns.node.ID] = append(e.attempts[ns.node.ID], att)
	if err := e.putState(ctx, ns, StatusRunning, map[string]any{"active_attempt_id": attemptID, "latest_attempt_no": no,
		"started_at": isoMillis(e.c.now()), "finished_at": "", "status_reason": "", "blocked_by": "[]"}); err != nil {
		return nil, err
	}
	return att, nil
}

// attemptResultFields are the Attempt's terminal fields: the outcome, the JOB log's start
// marker, and what kSQL-Flow's result reports (or why there is none).
func (e *execution) attemptResultFields(rr runResult, obs Observation, out Outcome, jl kintoneapi.Record) map[string]any {
	fields := map[string]any{"status": out.AttemptStatus, "result_code": out.AttemptCode, "finished_at": isoMillis(e.c.now())}
	if jl != nil {
		// The JOB log's start marker: its time, and its execution id where no result names one.
		fields["runner_execution_started_at"] = jl.Str("runner_execution_started_at")
		fields["execution_id"] = jl.Str("execution_id")
	}
	if obs.Result != nil {
		res := *obs.Result
		fields["execution_id"] = res.ExecutionID
		fields["finished_at"] = res.FinishedAt
		if t, err := time.Parse(time.RFC3339Nano, res.FinishedAt); err == nil && defect.AttemptFinishedAtRoundedUp {
			fields["finished_at"] = isoMillis(t.Truncate(time.Minute).Add(time.Minute)) // planted defect: finished_at rounded up to the next minute
		}
		fields["duration_sec"] = *res.DurationMs / 1000
		fields["read_count"] = *res.ReadCount
		fields["written_count"] = *res.WrittenCount
		if res.LastSuccessfulChunkNo != nil {
			fields["last_successful_chunk_no"] = *res.LastSuccessfulChunkNo
		}
		if res.LastWrittenKey != nil {
			fields["last_written_key"] = *res.LastWrittenKey
		}
		if res.Error != nil {
			fields["error_message"] = res.Error.Message
		}
	} else {
		fields["error_message"] = noResultMessage(rr, obs)
	}
	return fields
}

// finishNode writes the Attempt's terminal fields, then the Node State's outcome, then the
// Run's aggregate.
func (e *execution) finishNode(ctx context.Context, ns *nodeState, att *attemptRec, out Outcome, fields map[string]any) error {
	var err error
	if att.rev, err = e.st.update(ctx, e.st.auditApp, att.key, vals(fields), att.rev); err != nil {
		return fmt.Errorf("finalise Attempt %s: %w", att.id, err)
	}
	att.status, att.code = out.AttemptStatus, out.AttemptCode
	stateFields := map[string]any{"status_reason": out.NodeReason, "finished_at": isoMillis(e.c.now())}
	if out.NodeStatus == StatusWaiting {
		// PREPARE_FAILED: nothing ran; the node waits for a later Invocation and keeps its
		// attempt number so the next Attempt is numbered after this one.
		stateFields = map[string]any{"status_reason": out.NodeReason, "started_at": "", "finished_at": "", "active_attempt_id": ""}
	}
	if err := e.putState(ctx, ns, out.NodeStatus, stateFields); err != nil {
		return err
	}
	_, err = e.aggregateAfterTick(ctx, true)
	return err
}

func noResultMessage(rr runResult, obs Observation) string {
	// The real FlowNet 1.0.0's words for a missing or unusable result (its result
	// classifier); kSQL-Flow's stderr is not kept in the audit.
	switch {
	case rr.LaunchErr != nil:
		return fmt.Sprintf("kSQL-Flow could not be started: %v", rr.LaunchErr)
	case rr.ForcedKill:
		return "process exceeded its grace period and was forcibly terminated"
	case obs.ResultInvalid != nil:
		return fmt.Sprintf("invalid execution result: %v", obs.ResultInvalid)
	case rr.ResultRaw != nil:
		return "result file is not complete JSON"
	default:
		return "result file does not exist or could not be read"
	}
}

// jobLog reads the JOB-log row of an attempt (nil when there is none; more than one is an
// error). attempt_id is non-unique text, so every token match is read and Go keeps the
// exact one; a `limit 2` could let rows of attempts whose id extends this one hide it.
func (e *execution) jobLog(ctx context.Context, attemptID string) (kintoneapi.Record, error) {
	return e.st.findOneExact(ctx, e.st.logApp, "attempt_id = "+q(attemptID), "attempt_id", attemptID, func(n int) error {
		return coded(codeMultipleRecords, "JOB log has %d rows for attempt %s", n, attemptID)
	})
}

// adjudicateOrphans settles Node States left RUNNING by an earlier Invocation: a RUNNING
// Attempt of another Invocation is looked up in the JOB log; an Attempt that is already
// terminal is copied to its Node State. A JOB-log read failure stops the Invocation.
func (e *execution) adjudicateOrphans(ctx context.Context) error {
	for _, id := range e.order {
		ns := e.states[id]
		if ns.status != StatusRunning {
			continue
		}
		a := e.attempt(id, ns.active)
		if a == nil {
			e.notes = append(e.notes, "orphan "+id+": active attempt not found, left RUNNING")
			continue
		}
		var out Outcome
		fields := map[string]any{}
		switch {
		case a.status == StatusRunning && a.invocationID != e.invID:
			jl, err := e.jobLog(ctx, a.id)
			if err != nil {
				return &codedError{Code: "JOB_LOG_UNAVAILABLE", Msg: fmt.Sprintf("orphan adjudication of %s: %v", a.id, err), Err: err}
			}
			out = OrphanOutcome(jobLogStatus(jl), jl != nil)
			fields["status"], fields["result_code"] = out.AttemptStatus, out.AttemptCode
			fields["finished_at"] = isoMillis(e.c.now())
			// As the real FlowNet adjudicates: the Attempt keeps its own start marker (the JOB
			// log is evidence, not a write to it), takes the JOB log's execution id when it has
			// none, and an UNKNOWN one says why.
			if jl != nil {
				if a.executionID == "" {
					fields["execution_id"] = jl.Str("execution_id")
				}
				if f := jl.Str("finished_at"); f != "" {
					fields["finished_at"] = f
				}
			}
			if out.AttemptStatus == StatusUnknown {
				fields["error_message"] = "orphan RUNNING attempt had no terminal execution result"
			}
			if err := e.writeTick(ctx); err != nil {
				return err
			}
			rev, err := e.st.update(ctx, e.st.auditApp, a.key, vals(fields), a.rev)
			if err != nil {
				return fmt.Errorf("adjudicate Attempt %s: %w", a.id, err)
			}
			a.rev, a.status, a.code = rev, out.AttemptStatus, out.AttemptCode
			e.adjudicatedNote(a.id, out.AttemptStatus, out.AttemptCode)
		case a.status != StatusRunning:
			out = Outcome{a.status, a.code, a.status, a.code}
			if a.code == CodePrepareFailed {
				out.NodeStatus = StatusWaiting
			}
			// Copied without a note: the real FlowNet's reconciliation leaves the reason alone.
		default:
			continue
		}
		if err := e.writeTick(ctx); err != nil {
			return err
		}
		if err := e.putState(ctx, ns, out.NodeStatus, map[string]any{"status_reason": out.NodeReason, "finished_at": isoMillis(e.c.now())}); err != nil {
			return err
		}
	}
	return nil
}

func jobLogStatus(r kintoneapi.Record) string {
	if r == nil {
		return ""
	}
	return r.Str("status")
}

// finalizeOtherInvocations closes Invocations of this Run left RUNNING (the app has no
// CREATED status, the product's other unterminated one) by a
// process that lost its lease or died: CANCELLED / NETWORK_LEASE_INTERRUPTED, the reason
// suffixed "; finalized as an abandoned invocation during reconciliation", and a
// RECONCILIATION_REPAIR audit whose JSON is the real FlowNet's (before and after carry the
// Invocation record's $revision).
func (e *execution) finalizeOtherInvocations(ctx context.Context) error {
	recs, err := e.st.findExact(ctx, e.st.auditApp, `record_type in ("RUN_INVOCATION") and run_id in (`+q(e.runID)+`) and status in ("RUNNING")`, "run_id", e.runID)
	if err != nil {
		return err
	}
	sort.Slice(recs, func(i, j int) bool { return atoi(recs[i].ID()) < atoi(recs[j].ID()) })
	for _, r := range recs {
		if r.Str("invocation_id") == e.invID {
			continue
		}
		if err := e.writeTick(ctx); err != nil {
			return err
		}
		now := isoMillis(e.c.now())
		rev, err := e.st.update(ctx, e.st.auditApp, r.Str("record_key"), vals(map[string]any{"status": StatusCancelled, "result_code": codeLeaseInterruptedCode, "finished_at": now,
			"reason": r.Str("reason") + "; finalized as an abandoned invocation during reconciliation"}), r.Revision())
		if err != nil {
			return fmt.Errorf("finalise stale Invocation %s: %w", r.Str("invocation_id"), err)
		}
		eventID := uuid.NewString()
		audit := map[string]any{
			"event_id": eventID, "event_type": "RECONCILIATION_REPAIR", "repair_type": "INVOCATION_FINALIZED",
			"run_id": e.runID, "target_type": "RUN_INVOCATION", "target_id": r.Str("invocation_id"),
			"before": map[string]any{"status": r.Str("status"), "result_code": r.Str("result_code"), "revision": atoi(r.Revision())},
			"after":  map[string]any{"status": StatusCancelled, "result_code": codeLeaseInterruptedCode, "revision": atoi(rev)},
			"basis":  "the current Network lock owner makes an older unterminated invocation unable to continue", "occurred_at": now,
		}
		b, _ := json.Marshal(audit)
		if err := e.writeTick(ctx); err != nil {
			return err
		}
		if _, _, err := e.st.insert(ctx, e.st.auditApp, "OP:"+eventID, vals(map[string]any{
			"record_type": "OPERATION_AUDIT", "run_id": e.runID, "result_code": "INVOCATION_FINALIZED",
			"reason": string(b), "resolved_at": now,
		})); err != nil {
			return fmt.Errorf("audit finalisation of Invocation %s: %w", r.Str("invocation_id"), err)
		}
	}
	return nil
}
