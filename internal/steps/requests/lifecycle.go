package requests

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/operator"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// lifecycleDomain: the request lifecycle of P2-16 — the requester's cancel as the request
// board sends it (a revision-fenced PUT of cancel_requested, answered 200 or 409), the
// invocations a request may not have caused, and CLOSE (archive-run).
type lifecycleDomain struct{}

func (d lifecycleDomain) register(reg stepdef.Registry) {
	reg.Step(`^a START request for network "([^"]+)" with a run_id of (\d+) characters is created as "([^"]+)"$`, d.startWithLongRunID)
	reg.Step(`^the requester cancels `+reqRef+` on the request board with the revision (it was created at|it reads now), and kintone answers (200|409)$`, d.boardCancel)
	reg.Step(`^no run invocation was requested by `+reqRef+`$`, d.noInvocationByRequest)
	reg.Step(`^a CLOSE request for the run is created`+asName+`$`, d.closeForTheRun)
	reg.Step(`^the run has exactly one RUN_ARCHIVED audit, of `+reqRef+`, with its five fields$`, d.oneArchiveAudit)
	reg.Step(`^the RUN_ARCHIVED audit of the run says result code "RUN_ARCHIVED" and the service principal FlowNet was given$`, d.archiveAuditPrincipal)
	reg.Step(`^the last NETWORK_LOCK record of the state app is noted$`, d.noteLastLock)
	reg.Step(`^exactly one NETWORK_LOCK record was added since it was noted: a LOCKDONE: tombstone without lock key, "SUCCESS"$`, d.oneNewTombstone)
	reg.Step(`^`+reqRef+` is still "REQUESTED" and withdrawn: its claim lost on revision$`, d.stillRequestedWithdrawn)
	reg.Step(`^`+reqRef+` ended "DONE" or "REJECTED", never "CANCELLED"$`, d.endedNotCancelled)
	reg.Step(`^`+reqRef+` kept the outcome of the run's last invocation, its message marked cancel_ignored$`, d.keptOutcomeCancelIgnored)
	reg.Step(`^FlowNet resumes the run by its id in the background as "([^"]+)"$`, d.resumesInTheBackground)
	reg.Step(`^the operator archives the run as "([^"]+)"$`, d.operatorArchives)
	reg.Step(`^"([^"]+)" printed outcome "([A-Z_]+)" with (code|audit) "([A-Z_]+)" and lock_released (true|false)$`, d.archiveOutcome)
	reg.Step(`^the run's lifecycle_status is "([A-Z]+)"$`, d.lifecycleIs)
	reg.Step(`^barrier "([^"]+)" arrived exactly once, with response status (\d+)$`, d.arrivedOnce)
	reg.Step(`^the status of the run shows it "([A-Z]+)", lifecycle "([A-Z]+)", with (no hold|a hold REQUESTED or ACCEPTED)$`, d.statusShowsHold)
}

// lifecycleState: the last NETWORK_LOCK record id noted before a CLOSE.
type lifecycleState struct {
	lastLock  int
	lockNoted bool
}

var lifecycleKey = scenario.NewKey[lifecycleState]("lifecycle")

// startWithLongRunID: a START whose run_id is longer than the 128 code points a request
// allows — structurally invalid (VALUE_TOO_LONG), so the poller must not claim it.
func (lifecycleDomain) startWithLongRunID(ctx context.Context, label string, n int, name string) error {
	m, err := startOn(ctx, label, name)
	if err != nil {
		return err
	}
	base := kit.FixturesOf(ctx).Scope().ID() + "_run_"
	if len(base) >= n {
		return fmt.Errorf("a run_id of %d characters cannot start with the scope %q", n, base)
	}
	m.runID = base + strings.Repeat("x", n-len(base))
	return requestsOf(ctx).create(ctx, m, nil)
}

// boardCancel sends exactly what the request board sends when a requester withdraws a
// request: {"cancel_requested":{"value":["取消"]}} with the revision the board read, through
// the write guard, and compares kintone's HTTP answer with the expected one. The board read
// the request either when it was created (p2-16-02 claim wins: before the claim, so the
// revision is stale once the claim landed) or just now (an exact read by $id: the revision
// of whatever the poller last wrote, so the cancel lands on the claimed request).
func (lifecycleDomain) boardCancel(ctx context.Context, ref, read string, want int) error {
	sc := kit.SceneOf(ctx)
	rs := requestsOf(ctx)
	m, err := rs.find(ref)
	if err != nil {
		return err
	}
	rev := m.revision
	if read == "it reads now" {
		r, err := readRequest(ctx, m)
		if err != nil {
			return err
		}
		sc.St.Note("board read of request "+m.name, fmt.Sprintf("%s at revision %s", kit.OrNone(r.RequestState), r.Revision))
		rev = r.Revision
	}
	g, err := rs.writer(ctx)
	if err != nil {
		return err
	}
	seen, err := sendBoardCancel(ctx, g, m, rev)
	if err != nil {
		return err
	}
	sc.St.Note("board cancel of request "+m.name, fmt.Sprintf("PUT cancel_requested at revision %s: HTTP %d", rev, seen))
	return sc.St.On("harness.request.board-put").Equal(fmt.Sprintf("HTTP status of the board's cancel PUT of request %s at revision %s", m.name, rev), want, seen)
}

// sendBoardCancel sends the board's cancel PUT of request m at revision rev through g and
// returns kintone's HTTP status; an error is a failure that is no kintone answer.
func sendBoardCancel(ctx context.Context, g *kintoneguard.Client, m *madeRequest, rev string) (int, error) {
	_, err := g.UpdateRecord(ctx, kit.SceneOf(ctx).App(target.RoleRequest), m.id,
		kintoneapi.Values(map[string]any{"cancel_requested": []string{"取消"}}), rev)
	var ae *kintoneapi.APIError
	switch {
	case errors.As(err, &ae):
		return ae.Status, nil
	case err != nil:
		return 0, fmt.Errorf("cancel request %q: %w", m.name, err)
	}
	return 200, nil
}

// noInvocationByRequest: no RUN_INVOCATION of any run carries the request's correlation
// (app-request:<$id>:<creator>), built from what kintone recorded for the request.
func (lifecycleDomain) noInvocationByRequest(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	if err := sc.St.On("request.作成者").Assert("creator code (作成者) of request "+m.name, "non-empty", kit.OrNone(r.Creator), r.Creator != ""); err != nil {
		return err
	}
	by := "app-request:" + r.RecordID + ":" + kit.EncodeURIComponent(r.Creator)
	invs, err := kit.ReadExact(ctx, sc, target.RoleAudit, kit.DecodeRunInvocation, kit.FieldIs("record_type", "RUN_INVOCATION"), kit.FieldIs("requested_by", by))
	if err != nil {
		return err
	}
	var ids []string
	for _, inv := range invs {
		ids = append(ids, inv.InvocationID)
	}
	return sc.St.On("audit.RUN_INVOCATION.requested_by").Equal("run invocations requested by "+by, kit.OrNone(""), kit.OrNone(strings.Join(ids, ", ")))
}

// statusShowsHold reads the run's status (JSON) and compares its status, lifecycle_status
// and hold: a hold stays on a Run that became terminal (product-contract §3.5) until RELEASE.
func (lifecycleDomain) statusShowsHold(ctx context.Context, status, lifecycle, hold string) error {
	sc := kit.SceneOf(ctx)
	r, run, err := operator.ReadRunStatus(ctx, "")
	if err != nil {
		return err
	}
	seenHold := "no hold"
	if run.Hold != nil {
		seenHold = "hold " + run.Hold.State
	}
	want := "no hold"
	ok := run.Hold == nil
	if hold != "no hold" {
		want = "hold REQUESTED|ACCEPTED"
		ok = run.Hold != nil && (run.Hold.State == "REQUESTED" || run.Hold.State == "ACCEPTED")
	}
	if err := sc.St.On("output.status.json.runs[].status").Equal("status of the run in "+r.Call.Name, status, run.Status); err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.runs[].lifecycle_status").Equal("lifecycle_status of the run in "+r.Call.Name, lifecycle, kit.OrNone(run.LifecycleStatus)); err != nil {
		return err
	}
	return sc.St.On("output.status.json.runs[].hold", "output.status.json.runs[].hold.state").Assert("hold of the run in "+r.Call.Name, want, seenHold, ok)
}

func (lifecycleDomain) closeForTheRun(ctx context.Context, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	m.typ = "CLOSE"
	return requestsOf(ctx).create(ctx, m, nil)
}

// oneArchiveAudit: the CLOSE of request ref left exactly one RUN_ARCHIVED OPERATION_AUDIT
// for the run; its event id is the one the request's result names, and its audit object holds
// requested_by (the request's correlation), reason (the request's own; compared here, never
// recorded), archived_at, previous_status FAILED and run_revision_before (the Run's $revision
// before the archive PUT: the current one − 1); resolved_at is archived_at to the minute.
func (lifecycleDomain) oneArchiveAudit(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, req, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	run, archived, err := runArchivedAudits(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.OPERATION_AUDIT.result_code", "audit.RUN_ARCHIVED.run_id").Equal("RUN_ARCHIVED audits of the run", 1, len(archived)); err != nil {
		return err
	}
	a := archived[0]
	ev := eventIDIn(req.ResultMessage)
	if err := sc.St.On("audit.OPERATION_AUDIT.record_key").Equal("record_key of the RUN_ARCHIVED audit (OP:<event id of request "+m.name+">)", "OP:"+kit.OrNone(ev), a.RecordKey); err != nil {
		return err
	}
	str := func(k string) string {
		switch v := a.Event[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		case nil:
			return "(none)"
		default:
			return fmt.Sprint(v)
		}
	}
	if err := sc.St.On("audit.RUN_ARCHIVED.event_type", "audit.RUN_ARCHIVED.event_id").Equal("event_type and event_id of the RUN_ARCHIVED audit", "RUN_ARCHIVED "+ev, str("event_type")+" "+str("event_id")); err != nil {
		return err
	}
	wantBy := "app-request:" + req.RecordID + ":" + kit.EncodeURIComponent(req.Creator)
	if err := sc.St.On("audit.RUN_ARCHIVED.requested_by").Equal("requested_by of the RUN_ARCHIVED audit", wantBy, str("requested_by")); err != nil {
		return err
	}
	same := "differs from the reason of request " + m.name
	if str("reason") == m.reason {
		same = "equals the reason of request " + m.name
	}
	if err := sc.St.On("audit.RUN_ARCHIVED.reason").Equal("reason of the RUN_ARCHIVED audit (the body is not recorded)", "equals the reason of request "+m.name, same); err != nil {
		return err
	}
	if err := sc.St.On("audit.RUN_ARCHIVED.previous_status").Equal("previous_status of the RUN_ARCHIVED audit", "FAILED", str("previous_status")); err != nil {
		return err
	}
	if err := sc.St.On("audit.RUN_ARCHIVED.run_revision_before").Equal("run_revision_before of the RUN_ARCHIVED audit (the Run's $revision − 1)", strconv.Itoa(kit.Atoi(run.Revision)-1), str("run_revision_before")); err != nil {
		return err
	}
	at := str("archived_at")
	if err := sc.St.On("audit.RUN_ARCHIVED.archived_at").Assert("archived_at of the RUN_ARCHIVED audit", "a timestamp", at, !strings.HasPrefix(operator.MinuteOf(at), "unreadable")); err != nil {
		return err
	}
	// kintone's DATETIME keeps whole minutes: resolved_at can equal archived_at only so.
	return sc.St.On("audit.OPERATION_AUDIT.resolved_at", "audit.RUN_ARCHIVED.archived_at").Equal("resolved_at of the RUN_ARCHIVED audit, to the minute (kintone DATETIME)", operator.MinuteOf(at), operator.MinuteOf(a.ResolvedAt))
}

// archiveAuditPrincipal: the RUN_ARCHIVED audit object's result_code and service_principal
// (§1.9): RUN_ARCHIVED, and KSQL_FLOWNET_SERVICE_PRINCIPAL of the environment every FlowNet
// command of the scope is given (the poller's CLOSE child inherits it); the host only without it.
func (lifecycleDomain) archiveAuditPrincipal(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	_, archived, err := runArchivedAudits(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.OPERATION_AUDIT.result_code").Equal("RUN_ARCHIVED audits of the run", 1, len(archived)); err != nil {
		return err
	}
	ev := archived[0].Event
	if err := sc.St.On("audit.RUN_ARCHIVED.result_code").Equal("result_code of the RUN_ARCHIVED audit", "RUN_ARCHIVED", kit.OrNone(kit.Str(ev["result_code"]))); err != nil {
		return err
	}
	want := kit.FixturesOf(ctx).Scope().Principal("service")
	return sc.St.On("audit.RUN_ARCHIVED.service_principal").Equal("service_principal of the RUN_ARCHIVED audit against KSQL_FLOWNET_SERVICE_PRINCIPAL", want, kit.OrNone(kit.Str(ev["service_principal"])))
}

// runArchivedAudits reads the current run and its RUN_ARCHIVED OPERATION_AUDITs.
func runArchivedAudits(ctx context.Context) (kit.NetworkRun, []kit.OperationAudit, error) {
	run, err := kit.TheRun(ctx)
	if err != nil {
		return run, nil, err
	}
	ops, err := kit.ReadExact(ctx, kit.SceneOf(ctx), target.RoleAudit, kit.DecodeOperationAudit, kit.FieldIs("record_type", "OPERATION_AUDIT"), kit.FieldIs("run_id", run.RunID))
	if err != nil {
		return run, nil, err
	}
	var archived []kit.OperationAudit
	for _, o := range ops {
		if o.ResultCode == "RUN_ARCHIVED" {
			archived = append(archived, o)
		}
	}
	return run, archived, nil
}

// eventIDIn is the event id a CLOSE request's result message names ("… event_id=<id> …").
func eventIDIn(message string) string {
	if _, after, ok := strings.Cut(message, "event_id="); ok {
		return strings.Fields(after + " ")[0]
	}
	return ""
}

// lastLockID is the highest $id of the state app's NETWORK_LOCK records (0 when none). A
// tombstone names no network (its lock_key, owner and token are cleared, product-contract
// §3.7), so the one a CLOSE leaves can only be found as a record added after a noted $id: the
// query asks for the newest NETWORK_LOCK record, and every record is checked again in Go.
func lastLockID(ctx context.Context) (int, error) {
	sc := kit.SceneOf(ctx)
	recs, err := sc.Reader.GetRecords(ctx, sc.App(target.RoleState), `record_type in ("NETWORK_LOCK") order by $id desc limit 1`, nil)
	if err != nil {
		return 0, err
	}
	last := 0
	for _, r := range recs {
		if r.Str("record_type") == "NETWORK_LOCK" && kit.Atoi(r.ID()) > last {
			last = kit.Atoi(r.ID())
		}
	}
	return last, nil
}

func (lifecycleDomain) noteLastLock(ctx context.Context) error {
	ls := lifecycleKey.Of(scenario.From(ctx))
	last, err := lastLockID(ctx)
	if err != nil {
		return err
	}
	ls.lastLock, ls.lockNoted = last, true
	kit.SceneOf(ctx).St.Note("last NETWORK_LOCK record", strconv.Itoa(last))
	return nil
}

// locksAddedSinceNoted reads the NETWORK_LOCK records added after the noted one, and the
// noted $id (every record is checked again in Go).
func locksAddedSinceNoted(ctx context.Context) ([]kit.NetworkLock, int, error) {
	sc := kit.SceneOf(ctx)
	ls := lifecycleKey.Of(sc.St)
	if !ls.lockNoted {
		return nil, 0, fmt.Errorf("no NETWORK_LOCK record was noted (missing: the last NETWORK_LOCK record of the state app is noted)")
	}
	recs, err := sc.Reader.GetAll(ctx, sc.App(target.RoleState), fmt.Sprintf(`record_type in ("NETWORK_LOCK") and $id > %d`, ls.lastLock), nil)
	if err != nil {
		return nil, 0, err
	}
	var added []kit.NetworkLock
	for _, r := range recs {
		if r.Str("record_type") == "NETWORK_LOCK" && kit.Atoi(r.ID()) > ls.lastLock {
			added = append(added, kit.DecodeNetworkLock(r))
		}
	}
	return added, ls.lastLock, nil
}

func (lifecycleDomain) oneNewTombstone(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	added, last, err := locksAddedSinceNoted(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.On("state.NETWORK_LOCK.record_key").Equal(fmt.Sprintf("NETWORK_LOCK records added after record %d", last), 1, len(added)); err != nil {
		return err
	}
	l := added[0]
	prefix, _, _ := strings.Cut(l.RecordKey, ":")
	return sc.St.On("state.NETWORK_LOCK.record_key", "state.NETWORK_LOCK.lock_key", "state.NETWORK_LOCK.status").Equal("the added NETWORK_LOCK record: record_key prefix | lock_key | status",
		"LOCKDONE | (none) | SUCCESS", prefix+" | "+kit.OrNone(l.LockKey)+" | "+kit.OrNone(l.Status))
}

// operatorArchives runs archive-run for the current network's run as an operator would, not
// through the poller: KSQL_FLOWNET_REQUESTED_BY is the scope's "<scope>_archive_harness".
func (lifecycleDomain) operatorArchives(ctx context.Context, name string) error {
	c, err := startOperatorArchive(ctx, name)
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

// startOperatorArchive starts the operator's archive-run of the current run without waiting.
func startOperatorArchive(ctx context.Context, name string) (*kit.FlownetCall, error) {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return nil, err
	}
	n, err := fx.Rendered()
	if err != nil {
		return nil, err
	}
	by, err := fx.Principal(sc, "archive_harness")
	if err != nil {
		return nil, err
	}
	return kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "archive-run",
		Args:  []string{n.Path, "--run-id", id, "--reason-file", "@reason", "--profile", sc.Suite.Target.Profile},
		Files: map[string]string{"reason": fx.Scope().Reason("archived by " + sc.St.ID)},
		Env:   []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}})
}

// archiveOutcome compares the JSON line archive-run printed: outcome, code or audit, and
// lock_released (always present in the union, product-contract §1.9).
func (lifecycleDomain) archiveOutcome(ctx context.Context, name, outcome, which, value, released string) error {
	sc := kit.SceneOf(ctx)
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	field := func(k string) string { return kit.JSONField(call.JSON, k) }
	want := outcome + " " + which + "=" + value + " lock_released=" + released
	seen := field("outcome") + " " + which + "=" + field(which) + " lock_released=" + field("lock_released")
	return sc.St.On("output.archive-run.json.outcome").Equal("JSON outcome of "+name, want, seen)
}

func (lifecycleDomain) lifecycleIs(ctx context.Context, want string) error {
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("state.NETWORK_RUN.lifecycle_status").Equal("lifecycle_status of the run", want, kit.OrNone(run.LifecycleStatus))
}

// arrivedOnce: the arrival log of the barrier's proxy holds exactly one event for it (a
// barrier fires once), with the response status (0: held before it was sent).
func (lifecycleDomain) arrivedOnce(ctx context.Context, name string, status int) error {
	sc := kit.SceneOf(ctx)
	b, p, err := proxy.BarrierOf(ctx, name)
	if err != nil {
		return err
	}
	var seen []string
	for _, a := range p.Arrivals() {
		if a.BarrierID == b.ID {
			seen = append(seen, fmt.Sprintf("%s %s %s status %d", a.Phase, a.Method, a.Path, a.ResponseStatus))
		}
	}
	if err := sc.St.On("harness.barrier").Equal("arrivals logged for barrier "+name, 1, len(seen)); err != nil {
		return err
	}
	return sc.St.On("traffic.barrier.status").Assert("response status of the arrival at barrier "+name, status, seen[0], strings.HasSuffix(seen[0], fmt.Sprintf(" status %d", status)))
}

// resumesInTheBackground starts run-network --resume-run for the run and does not wait: a
// barrier holds it while the scenario acts.
func (lifecycleDomain) resumesInTheBackground(ctx context.Context, name string) error {
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	if err := kit.SnapshotAttempts(ctx, name); err != nil {
		return err
	}
	_, err = kit.RunNetworkWith(ctx, name, nil, "--resume-run", id)
	return err
}

// stillRequestedWithdrawn: the poller's claim PUT was sent after the requester's cancel with
// the revision read before it, so it lost (409): the request is still REQUESTED, without
// claim fields, with cancel_requested set.
func (lifecycleDomain) stillRequestedWithdrawn(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	return sc.St.On("request.request_state", "request.cancel_requested", "request.claimed_at").Equal("request_state | cancel_requested | claimed_at of request "+m.name,
		"REQUESTED | true | (none)", fmt.Sprintf("%s | %t | %s", kit.OrNone(r.RequestState), r.CancelRequested, kit.OrNone(r.ClaimedAt)))
}

// endedNotCancelled: a request whose claim won is run to its end: DONE or REJECTED, never
// CANCELLED (a cancel after the claim is ignored).
func (lifecycleDomain) endedNotCancelled(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	seen := kit.OrNone(r.RequestState) + "/" + kit.OrNone(r.ResultCode)
	return sc.St.On("request.request_state").Assert("request_state of request "+m.name, "DONE or REJECTED", seen, r.RequestState == "DONE" || r.RequestState == "REJECTED")
}

// cancelIgnored is what the finalizer appends to the outcome's message when the requester
// withdrew after the claim (product-contract §1.10 step 5).
const cancelIgnored = " (cancel_ignored)"

// keptOutcomeCancelIgnored: a cancel that landed after the claim changes nothing but the
// message. The request is finalized with the outcome of the START's child exactly as
// without a cancel — DONE, the invocation's result code, "aggregate=<run status>;
// invocation_id=<id>" (§1.10 run-network classification) — and the finalizer appended
// " (cancel_ignored)" because its re-read showed cancel_requested. The expectation is built
// from the run's own records (NETWORK_RUN status, the last RUN_INVOCATION), the outcome from
// the request record; cancel_requested is compared too, so the cancel is known to have
// stayed on the record the finalizer re-read.
func (lifecycleDomain) keptOutcomeCancelIgnored(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	last, err := kit.TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	want := fmt.Sprintf("DONE | %s | aggregate=%s; invocation_id=%s%s | cancel_requested true",
		kit.OrNone(last.ResultCode), kit.OrNone(run.Status), kit.OrNone(last.InvocationID), cancelIgnored)
	seen := fmt.Sprintf("%s | %s | %s | cancel_requested %t",
		kit.OrNone(r.RequestState), kit.OrNone(r.ResultCode), kit.OrNone(r.ResultMessage), r.CancelRequested)
	return sc.St.On("request.request_state", "request.result_code", "request.result_message", "request.cancel_requested").Equal("request_state | result_code | result_message | cancel_requested of request "+m.name, want, seen)
}
