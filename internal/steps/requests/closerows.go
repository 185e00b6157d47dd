package requests

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// closeRowDomain: what one CLOSE left, row by row of product-contract §1.9's result table —
// archive-run's JSON union (every field the row names, and no audit or code the row does not
// name), the RUN_ARCHIVED audit under the event id the CLOSE printed or its request's result
// names, and the Network lock the CLOSE took (its owner is the event id, §1.9).
type closeRowDomain struct{}

func (d closeRowDomain) register(reg stepdef.Registry) {
	reg.Step(`^"([^"]+)" printed the archive result "([^"]+)"$`, d.printedResult)
	reg.Step(`^the run has (no|exactly one) RUN_ARCHIVED audit under the event id "([^"]+)" printed$`, d.auditOfPrintedEvent)
	reg.Step(`^the run has (no|exactly one) RUN_ARCHIVED audit under the event id `+reqRef+` names$`, d.auditOfRequestEvent)
	reg.Step(`^the network lock "([^"]+)" took is (released|held under its event id)$`, d.lockOfTheClose)
	reg.Step(`^the network lock the CLOSE of `+reqRef+` took is (released|held under its event id)$`, d.lockOfTheRequestedClose)
	reg.Step(`^fault "([^"]+)" in the fault proxy of "([^"]+)" answers the GET of records in the audit app with another event's RUN_ARCHIVED audit under the key of the event that holds the lock "([^"]+)" took, once$`, d.answersAnotherEventsAudit)
}

// printedResult compares archive-run's JSON line with "k=v k=v …": outcome, audit, code and
// lock_released as printed (null for JSON null), run_revision as "null" or "current" (the
// Run's $revision now: the PUT's answer when this CLOSE archived it). audit and code, when
// the row does not name them, must be absent: the union's other variants carry none.
func (closeRowDomain) printedResult(ctx context.Context, name, row string) error {
	sc := kit.SceneOf(ctx)
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	field := func(k string) string { return kit.JSONField(call.JSON, k) }
	want := map[string]string{"audit": "(absent)", "code": "(absent)"}
	var keys []string
	for _, kv := range strings.Fields(row) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("archive result %q: %q is not key=value", row, kv)
		}
		want[k] = v
		keys = append(keys, k)
	}
	for _, k := range []string{"audit", "code"} {
		if !strings.Contains(" "+row, " "+k+"=") {
			keys = append(keys, k)
		}
	}
	if want["run_revision"] == "current" {
		run, err := kit.TheRun(ctx)
		if err != nil {
			return err
		}
		want["run_revision"] = run.Revision
	}
	var w, s []string
	for _, k := range keys {
		w = append(w, k+"="+want[k])
		s = append(s, k+"="+field(k))
	}
	if err := sc.St.On("output.archive-run.json.outcome", "output.archive-run.json.audit", "output.archive-run.json.lock_released", "output.archive-run.json.code").Equal("archive result of "+name, strings.Join(w, " "), strings.Join(s, " ")); err != nil {
		return err
	}
	ev := field("event_id")
	return sc.St.On("output.archive-run.json.event_id").Assert("event_id of "+name, "archive_<uuid>", ev, strings.HasPrefix(ev, "archive_"))
}

func (d closeRowDomain) auditOfPrintedEvent(ctx context.Context, which, name string) error {
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	ev, _ := call.JSON["event_id"].(string)
	return archiveAuditsUnder(ctx, which, ev, name)
}

func (d closeRowDomain) auditOfRequestEvent(ctx context.Context, which, ref string) error {
	m, req, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	return archiveAuditsUnder(ctx, which, eventIDIn(req.ResultMessage), "request "+m.name)
}

// archiveAuditsUnder: the run's RUN_ARCHIVED OPERATION_AUDITs, and how many of them sit under
// OP:<event id> (§1.9: the audit's key). "no" means none at all for the run, so that an audit
// written under another key is not missed either.
func archiveAuditsUnder(ctx context.Context, which, eventID, whose string) error {
	sc := kit.SceneOf(ctx)
	if err := sc.St.On("output.archive-run.json.event_id").Assert("event id of "+whose, "archive_<uuid>", kit.OrNone(eventID), strings.HasPrefix(eventID, "archive_")); err != nil {
		return err
	}
	_, archived, err := runArchivedAudits(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for _, o := range archived {
		keys = append(keys, o.RecordKey)
	}
	want := "(none)"
	if which == "exactly one" {
		want = "OP:" + eventID
	}
	return sc.St.On("audit.OPERATION_AUDIT.record_key").Equal("record keys of the run's RUN_ARCHIVED audits (the event of "+whose+")", want, kit.OrNone(strings.Join(keys, ", ")))
}

// lockOfTheClose: exactly one NETWORK_LOCK record was added since the last one was noted —
// the lock this CLOSE took — and it is either released into a LOCKDONE: tombstone "SUCCESS"
// (§1.9: "always … release the lock (tombstone SUCCESS/NORMAL)") or still "RUNNING" under the
// CLOSE's own event id (owner = event_id), as a failed release leaves it.
func (closeRowDomain) lockOfTheClose(ctx context.Context, name, state string) error {
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	ev, _ := call.JSON["event_id"].(string)
	return lockOfEvent(ctx, name, ev, state)
}

// lockOfTheRequestedClose is lockOfTheClose for the archive-run a poller ran for a CLOSE
// request, whose event id the request's result message names.
func (closeRowDomain) lockOfTheRequestedClose(ctx context.Context, ref, state string) error {
	m, req, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	return lockOfEvent(ctx, "the CLOSE of request "+m.name, eventIDIn(req.ResultMessage), state)
}

func lockOfEvent(ctx context.Context, name, ev, state string) error {
	sc := kit.SceneOf(ctx)
	added, last, err := locksAddedSinceNoted(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.On("state.NETWORK_LOCK.record_key").Equal(fmt.Sprintf("NETWORK_LOCK records added after record %d (the lock %s took)", last, name), 1, len(added)); err != nil {
		return err
	}
	l := added[0]
	prefix, _, _ := strings.Cut(l.RecordKey, ":")
	seen := prefix + " | " + kit.OrNone(l.Status) + " | owner " + kit.OrNone(l.OwnerInvocationID)
	want := "LOCKDONE | SUCCESS | owner (none)"
	if state != "released" {
		want = "LOCK | RUNNING | owner " + kit.OrNone(ev)
	}
	return sc.St.On("state.NETWORK_LOCK.record_key", "state.NETWORK_LOCK.status", "state.NETWORK_LOCK.owner_invocation_id").Equal("the lock "+name+" took: record_key prefix | status | owner", want, seen)
}

// answersAnotherEventsAudit answers the process's next read of the audit app, in kintone's
// stead, with a RUN_ARCHIVED OPERATION_AUDIT under OP:<event id> that is not that event's:
// the record another writer would have left under the unique key. The harness may not write
// the audit app (its write guard), so the record is answered, not stored. The event id is
// the owner of the Network lock the CLOSE took (§1.9: owner = event_id), read while the
// CLOSE's audit insert is held. The record follows §4.2's physical mapping (record_key,
// result_code = event_type, reason = the audit object as JSON, resolved_at = archived_at)
// and differs from the event's own in previous_status only (the Run is FAILED; this one
// says CANCELLED): a CLOSE that compares any less than §1.9's five fields takes it for its
// own.
func (d closeRowDomain) answersAnotherEventsAudit(ctx context.Context, name, process, closer string) error {
	added, last, err := locksAddedSinceNoted(ctx)
	if err != nil {
		return err
	}
	if len(added) != 1 || !strings.HasPrefix(added[0].OwnerInvocationID, "archive_") {
		return fmt.Errorf("fault %q: want the one NETWORK_LOCK %s took after record %d, owned by its archive_<uuid> event; found %d added (%s)", name, closer, last, len(added), lockOwners(added))
	}
	ev := added[0].OwnerInvocationID
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	before, err := strconv.Atoi(run.Revision)
	if err != nil {
		return fmt.Errorf("fault %q: the run's $revision %q: %w", name, run.Revision, err)
	}
	body, err := anotherEventsAudit(ev, run.RunID, before-1, time.Now())
	if err != nil {
		return err
	}
	return proxy.AddFault(ctx, name, process, "GET", "records", "audit", "", "once", faultproxy.Fault{Action: faultproxy.ActionRespond, Status: 200, Body: body})
}

func lockOwners(locks []kit.NetworkLock) string {
	var owners []string
	for _, l := range locks {
		owners = append(owners, kit.OrNone(l.OwnerInvocationID))
	}
	return kit.OrNone(strings.Join(owners, ", "))
}

// anotherEventsAudit is kintone's GET records answer holding one OPERATION_AUDIT under
// OP:<eventID> whose audit object says the run was CANCELLED. revisionBefore is the Run's
// $revision before the CLOSE's one PUT (kintone adds one per update).
func anotherEventsAudit(eventID, runID string, revisionBefore int, now time.Time) (string, error) {
	at := now.UTC().Format("2006-01-02T15:04:05Z")
	obj, err := json.Marshal(map[string]any{
		"event_id": eventID, "event_type": "RUN_ARCHIVED", "run_id": runID, "result_code": "RUN_ARCHIVED",
		"requested_by": "another writer", "reason": "another event", "archived_at": at,
		"previous_status": "CANCELLED", "run_revision_before": revisionBefore, "service_principal": "another writer",
	})
	if err != nil {
		return "", err
	}
	rec := kintoneapi.Record{
		"$id": {Type: "__ID__", Value: "900000001"}, "$revision": {Type: "__REVISION__", Value: "1"},
		"record_key": {Type: "SINGLE_LINE_TEXT", Value: "OP:" + eventID}, "record_type": {Type: "DROP_DOWN", Value: "OPERATION_AUDIT"},
		"run_id": {Type: "SINGLE_LINE_TEXT", Value: runID}, "result_code": {Type: "SINGLE_LINE_TEXT", Value: "RUN_ARCHIVED"},
		"reason": {Type: "MULTI_LINE_TEXT", Value: string(obj)}, "resolved_at": {Type: "DATETIME", Value: at},
	}
	b, err := json.Marshal(map[string]any{"records": []kintoneapi.Record{rec}, "totalCount": nil})
	return string(b), err
}
