package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// archive-run (CLOSE, product-contract §1.9): a FAILED or CANCELLED Run is archived — its
// lifecycle_status becomes ARCHIVED (status unchanged) and it is never resumed again. The
// change is made under the Network lock (owner = the event id, the YAML's lease, a stale
// lock of someone else is never taken over), with the lease monitor running, a fencing
// check before every write and a revision-fenced Run PUT; a RUN_ARCHIVED OPERATION_AUDIT
// records it, and the lock is always released into its tombstone (SUCCESS / NORMAL).
// stdout is one JSON line, a union on `outcome`.

var archiveRunSpec = optionSpec{command: "archive-run", values: []string{"--run-id", "--reason-file", "--profile"},
	required: []string{"--run-id", "--reason-file"}, positional: 1, positionalName: "<network>"}

// archiveResult is the JSON line; run_id, event_id and lock_released are always present.
type archiveResult struct {
	Outcome      string  `json:"outcome"`
	RunID        string  `json:"run_id"`
	EventID      string  `json:"event_id"`
	RunRevision  *int    `json:"run_revision"`
	Audit        *string `json:"audit,omitempty"`
	Code         *string `json:"code,omitempty"`
	LockReleased bool    `json:"lock_released"`
}

// Archive outcomes.
const (
	archArchived        = "ARCHIVED"
	archAlreadyArchived = "ALREADY_ARCHIVED"
	archUnconfirmed     = "UNCONFIRMED"
	archRejected        = "REJECTED"
)

// archiveRun is `archive-run <network.yaml> --run-id <id> --reason-file <path> [--profile <p>]`.
func (c *cli) archiveRun(args []string) int {
	o, reason, problems := parseWithReason(archiveRunSpec, args)
	if len(problems) > 0 {
		return c.argumentError("archive-run", problems)
	}
	profile := o.get("--profile")
	need := []string{"KSQL_FLOWNET_REQUESTED_BY"}
	if profile == "" {
		need = append(need, "KSQL_FLOWNET_PROFILE")
	}
	env, err := c.requireEnv(need...)
	if err != nil {
		return c.fail(err, "ARCHIVE_RUN_FAILED")
	}
	if profile == "" {
		profile = env["KSQL_FLOWNET_PROFILE"]
	}
	n, verrs := LoadNetwork(o.positional[0])
	if len(verrs) > 0 {
		lines := make([]string, len(verrs))
		for i, e := range verrs {
			lines[i] = e.String()
		}
		return c.fail(coded("NETWORK_VALIDATION_FAILED", "Network validation failed with %d error(s):\n%s", len(verrs), strings.Join(lines, "\n")), "ARCHIVE_RUN_FAILED")
	}
	lease, hb := time.Duration(n.LeaseSec)*time.Second, time.Duration(n.HeartbeatSec)*time.Second
	st, err := c.newStore(false, lease)
	if err != nil {
		return c.fail(err, "ARCHIVE_RUN_FAILED")
	}
	principal := c.getenv("KSQL_FLOWNET_SERVICE_PRINCIPAL")
	if principal == "" || defect.ArchivePrincipalFromHost { // planted defect: the host first, the principal only without one
		principal = c.host()
	}
	a := &archiver{c: c, st: st, n: n, profile: profile, runID: o.get("--run-id"), reason: reason,
		by: env["KSQL_FLOWNET_REQUESTED_BY"], principal: principal, lease: lease, hb: hb,
		res: archiveResult{RunID: o.get("--run-id"), EventID: "archive_" + uuid.NewString(), LockReleased: true}}
	a.run(context.Background())
	b, _ := json.Marshal(a.res)
	fmt.Fprintln(c.stdout, string(b))
	if a.detail != "" {
		fmt.Fprintf(c.stderr, "archive-run: %s: %s\n", a.res.Outcome, a.detail)
	}
	ok := a.res.LockReleased && (a.res.Outcome == archAlreadyArchived ||
		a.res.Outcome == archArchived && a.res.Audit != nil && *a.res.Audit == "RECORDED")
	if ok {
		return 0
	}
	return 1
}

type archiver struct {
	c                     *cli
	st                    *store
	n                     *Network
	profile, runID        string
	reason, by, principal string
	lease, hb             time.Duration
	res                   archiveResult
	detail                string // one line for stderr (never the reason)
}

func (a *archiver) reject(code string, rev *int, format string, args ...any) {
	a.res.Outcome, a.res.Code, a.res.RunRevision = archRejected, strp(code), rev
	a.detail = fmt.Sprintf(format, args...)
}

func revOf(r kintoneapi.Record) *int {
	v := atoi(r.Revision())
	return &v
}

func (a *archiver) run(ctx context.Context) {
	var lock *networkLock
	if !defect.CloseWithoutNetworkLock { // planted defect: the CLOSE writes without holding the Network lock
		// The CLOSE's lock names its owner instance by the host alone (KSQL_FLOWNET_HOST, else
		// the hostname), as the real archive-run does: KSQL_FLOWNET_OWNER_INSTANCE_ID and the
		// local-pid form are run-network's (product-contract §1.3, §1.9).
		l, err := acquireLock(ctx, a.st, a.profile, a.n.NetworkID, a.res.EventID, a.c.host(), a.lease, a.hb, a.c.now)
		if err != nil {
			// Never acquired: nothing to release.
			a.reject(errCode(err, codeLockUnavailable), nil, "%v", err)
			if c := *a.res.Code; c != codeLockConflict && c != codeLockUnavailable {
				a.res.Code = strp(codeLockUnavailable)
			}
			return
		}
		lock = l
		lock.startHeartbeat()
	}
	a.decide(ctx, lock)
	if lock != nil {
		if err := lock.release(ctx, StatusSuccess, "NORMAL"); err != nil && !defect.ArchiveReleaseFailureIgnored { // planted defect: a failed release is reported released
			a.res.LockReleased = false
			if a.detail == "" {
				a.detail = "the network lock could not be released: " + err.Error()
			}
		}
	}
}

// tick is the lease monitor's tick before a write: a heartbeat, fenced (§1.9: "tick()
// (heartbeat/fence) before each write"); a no-op without a lock (the planted defect).
func tick(ctx context.Context, lock *networkLock) error {
	if lock == nil {
		return nil
	}
	return lock.tick(ctx)
}

// decide re-reads the Run inside the lock, checks it is closable and archives it.
func (a *archiver) decide(ctx context.Context, lock *networkLock) {
	run, err := findRunByID(ctx, a.st, a.runID)
	switch {
	case err != nil:
		a.reject("RUN_READ_FAILED", nil, "read Run %s: %v", a.runID, err)
		return
	case run == nil:
		a.reject("RUN_READ_FAILED", nil, "no Run with run_id %s", a.runID)
		return
	case run.Str("network_id") != a.n.NetworkID || runProfile(run) != a.profile:
		a.reject("RUN_READ_FAILED", nil, "Run %s belongs to network %s (profile %s), not %s (profile %s)", a.runID, run.Str("network_id"), runProfile(run), a.n.NetworkID, a.profile)
		return
	}
	status := run.Str("status")
	if run.Str("lifecycle_status") == "ARCHIVED" {
		a.res.Outcome, a.res.RunRevision = archAlreadyArchived, revOf(run)
		return
	}
	switch status {
	case StatusSuccess:
		a.reject("RUN_STATUS_NOT_CLOSABLE", revOf(run), "Run %s is SUCCESS; only FAILED or CANCELLED Runs can be closed", a.runID)
		return
	case StatusUnknown:
		if defect.CloseArchivesUnknownRun { // planted defect: an UNKNOWN Run is closed as if it had FAILED
			break
		}
		a.reject("RUN_UNKNOWN_NOT_CLOSABLE", revOf(run), "Run %s is UNKNOWN; resolve its nodes first", a.runID)
		return
	case StatusFailed, StatusCancelled:
	default:
		a.reject("RUN_NOT_TERMINAL", revOf(run), "Run %s is %s; only terminal Runs can be closed", a.runID, status)
		return
	}
	hold, err := readHold(ctx, a.st, a.runID)
	if err != nil {
		a.reject("RUN_READ_FAILED", revOf(run), "read the hold of Run %s: %v", a.runID, err)
		return
	}
	if hold != nil {
		a.reject("RUN_ON_HOLD", revOf(run), "Run %s is on hold (%s); RELEASE it first", a.runID, hold.State)
		return
	}
	if err := tick(ctx, lock); err != nil {
		a.reject("LEASE_INTERRUPTED", revOf(run), "%v", err)
		return
	}
	before := atoi(run.Revision())
	archivedAt := isoMillis(a.c.now())
	rev, ok := a.putArchived(ctx, lock, run, archivedAt)
	if !ok {
		return
	}
	r := atoi(rev)
	a.res.Outcome, a.res.RunRevision = archArchived, &r
	if err := tick(ctx, lock); err != nil && !defect.ArchiveAuditWithoutFence { // planted defect: the audit is appended without the fencing check after the ARCHIVED write
		a.pending("LEASE_INTERRUPTED_AFTER_ARCHIVE", "Run %s is archived but the lease was lost before its audit: %v", a.runID, err)
		return
	}
	a.recordAudit(ctx, archiveAudit{
		EventID: a.res.EventID, EventType: "RUN_ARCHIVED", RunID: a.runID, ResultCode: "RUN_ARCHIVED",
		RequestedBy: a.by, Reason: a.reason, ArchivedAt: archivedAt, PreviousStatus: status,
		RunRevisionBefore: before, ServicePrincipal: a.principal,
	})
	if defect.CloseClearsLateHold {
		a.clearLateHold(ctx)
	}
}

// clearLateHold is the planted defect CloseClearsLateHold: after the ARCHIVED write the CLOSE
// re-reads the Run's hold and releases one it finds, as if an archived Run needed none — a
// hold a STOP created after the CLOSE's check is lost instead of staying REQUESTED until an
// operator RELEASEs it (acceptance 8c).
func (a *archiver) clearLateHold(ctx context.Context) {
	rec, err := a.st.byKey(ctx, a.st.stateApp, "CANCEL:"+a.runID)
	if err != nil || rec == nil {
		return
	}
	h := holdRequest{st: a.st, runID: a.runID, by: a.by, reason: "archived", now: a.c.now}
	_, _, _ = h.release(ctx, rec)
}

// pending is ARCHIVED with the audit left PENDING for the reason code.
func (a *archiver) pending(code, format string, args ...any) {
	a.res.Audit, a.res.Code, a.detail = strp("PENDING"), strp(code), fmt.Sprintf(format, args...)
}

// unconfirmed is UNCONFIRMED / ARCHIVE_UNCONFIRMED: whether the Run is archived cannot be
// told, so neither ARCHIVED nor REJECTED may be claimed.
func (a *archiver) unconfirmed(format string, args ...any) {
	a.res.Outcome, a.res.RunRevision, a.res.Code = archUnconfirmed, nil, strp("ARCHIVE_UNCONFIRMED")
	a.detail = fmt.Sprintf(format, args...)
}

// putArchived writes lifecycle_status=ARCHIVED fenced by the revision read inside the lock
// and applies §1.9's recovery rules to a failed write. It returns the Run's new revision and
// true when the Run is archived by this CLOSE; otherwise the result is already set.
//
//   - Lost response (transport error): re-read the Run. ARCHIVED ⇒ the write landed, go on
//     with the revision read. ACTIVE ⇒ the write did not land: one retry of the same fenced
//     PUT (after a fencing check), whose failure is judged by these same rules, except that
//     a second ACTIVE after a lost retry is REJECTED / ARCHIVE_WRITE_FAILED with the
//     revision re-read: the one retry is spent and the re-read proves the Run is not
//     archived. Re-read failed ⇒ UNCONFIRMED (the only "unresolvable" case). Decision:
//     §1.9 names ARCHIVED, ACTIVE and unresolvable for the re-read after a lost response and
//     is silent on an ACTIVE after the retry; UNCONFIRMED carries run_revision null because
//     the CLOSE cannot tell the Run's state, which an ACTIVE re-read does tell; the real
//     FlowNet 1.0.0 answers REJECTED / ARCHIVE_WRITE_FAILED here (orchestration/archive-run.js).
//   - 409 (GAIA_CO02): re-read. ARCHIVED ⇒ ALREADY_ARCHIVED (someone else's CLOSE won);
//     anything else (the Run moved, or it cannot be read) ⇒ UNCONFIRMED.
//   - 400 GAIA_DA02 (the loser of a concurrent update, §2.6): re-read. ARCHIVED ⇒
//     ALREADY_ARCHIVED; a newer revision ⇒ UNCONFIRMED as for 409; the revision unchanged ⇒
//     nothing was written and nothing else was either: REJECTED / ARCHIVE_WRITE_FAILED
//     (fail closed, no resend). Decision: the contract names DA02 only in §2.6; a DA02 that
//     lost to another writer is the same event as a 409, so it is judged the same way.
//   - Any other error response ⇒ REJECTED / ARCHIVE_WRITE_FAILED: kintone refused the write.
func (a *archiver) putArchived(ctx context.Context, lock *networkLock, run kintoneapi.Record, archivedAt string) (string, bool) {
	put := func() (string, error) {
		// by updateKey on record_key, as the real FlowNet's archiveRun (repository.js)
		return a.st.kc.UpdateByKey(ctx, a.st.stateApp, "record_key", run.Str("record_key"),
			vals(map[string]any{"lifecycle_status": "ARCHIVED", "updated_at": archivedAt}), run.Revision())
	}
	rev, err := put()
	for retried := false; err != nil; {
		lost := kintoneapi.IsNetwork(err)
		if lost && defect.ArchiveLostResponseNotReread { // planted defect: a lost response is taken as a refused write
			a.reject("ARCHIVE_WRITE_FAILED", revOf(run), "archive Run %s: %v", a.runID, err)
			return "", false
		}
		conflict := kintoneapi.IsCode(err, "GAIA_CO02") || kintoneapi.StatusOf(err) == 409
		if conflict && defect.ArchiveConflictTakenAsArchived { // planted defect: a 409 is taken for another CLOSE's win without re-reading
			a.res.Outcome, a.res.RunRevision = archAlreadyArchived, revOf(run)
			return "", false
		}
		da02 := kintoneapi.IsCode(err, "GAIA_DA02")
		if !lost && !conflict && !da02 {
			a.reject("ARCHIVE_WRITE_FAILED", revOf(run), "archive Run %s: %v", a.runID, err)
			return "", false
		}
		again, rerr := findRunByID(ctx, a.st, a.runID)
		if rerr != nil && lost && defect.ArchiveUnreadableRunTakenAsArchived { // planted defect: a Run that cannot be re-read after a lost response is taken as archived
			return strconv.Itoa(atoi(run.Revision()) + 1), true
		}
		if rerr != nil || again == nil {
			a.unconfirmed("the archive write of Run %s failed (%v) and the Run could not be re-read: %v", a.runID, err, rerr)
			return "", false
		}
		archived := again.Str("lifecycle_status") == "ARCHIVED"
		switch {
		case lost && archived:
			return again.Revision(), true // the PUT landed; only its response was lost
		case archived:
			a.res.Outcome, a.res.RunRevision = archAlreadyArchived, revOf(again)
			return "", false
		case da02 && again.Revision() == run.Revision():
			a.reject("ARCHIVE_WRITE_FAILED", revOf(run), "archive Run %s: kintone could not lock the record and nothing was written: %v", a.runID, err)
			return "", false
		case !lost:
			a.unconfirmed("the archive write of Run %s failed (%v) and the Run re-read is %s at revision %s", a.runID, err, again.Str("lifecycle_status"), again.Revision())
			return "", false
		case retried && !defect.ArchiveRetryUnbounded: // planted defect: a lost PUT is resent until one lands
			a.reject("ARCHIVE_WRITE_FAILED", revOf(again), "archive Run %s: the retry was lost too (%v) and the Run re-read is %s at revision %s", a.runID, err, again.Str("lifecycle_status"), again.Revision())
			return "", false
		}
		retried = true
		if terr := tick(ctx, lock); terr != nil {
			a.reject("LEASE_INTERRUPTED", revOf(run), "%v", terr)
			return "", false
		}
		rev, err = put()
	}
	return rev, true
}

// archiveAudit is the RUN_ARCHIVED audit object, kept as JSON in the OPERATION_AUDIT's
// reason (the audit app has no fields for most of it).
type archiveAudit struct {
	EventID           string `json:"event_id"`
	EventType         string `json:"event_type"`
	RunID             string `json:"run_id"`
	ResultCode        string `json:"result_code"`
	RequestedBy       string `json:"requested_by"`
	Reason            string `json:"reason"`
	ArchivedAt        string `json:"archived_at"`
	PreviousStatus    string `json:"previous_status"`
	RunRevisionBefore int    `json:"run_revision_before"`
	ServicePrincipal  string `json:"service_principal"`
}

// sameEvent compares the fields §1.9 names for adjudicating a lost audit response: event_id,
// run_id, event_type, previous_status, run_revision_before. The rest (requested_by, reason,
// archived_at, service_principal) may legitimately differ in form (DATETIME minutes) and
// identify nothing on their own.
func (x archiveAudit) sameEvent(y archiveAudit) bool {
	return x.EventID == y.EventID && x.RunID == y.RunID && x.EventType == y.EventType &&
		x.PreviousStatus == y.PreviousStatus && x.RunRevisionBefore == y.RunRevisionBefore
}

// recordAudit appends the RUN_ARCHIVED audit under OP:<event_id> after the Run is archived;
// the Run stays ARCHIVED whatever happens here, so every failure is ARCHIVED with the audit
// PENDING (exit 1):
//   - kintone refused the insert, or the response was lost and no record is under the key
//     (or the re-read failed) ⇒ ARCHIVE_AUDIT_FAILED. Decision: no resend — the event id
//     is in the result, and an operator (or the next CLOSE, which answers ALREADY_ARCHIVED)
//     sees the audit is missing; a blind resend could race a late first write.
//   - the response was lost (or CB_VA01: the key is taken) and a record is under the key ⇒
//     it is ours only when the event's fields are ours (sameEvent): RECORDED; a record
//     that differs ⇒ AUDIT_CONFLICT.
func (a *archiver) recordAudit(ctx context.Context, ev archiveAudit) {
	key := "OP:" + ev.EventID
	obj := ev
	if defect.ArchiveAuditResultCodeMissing {
		obj.ResultCode = "" // planted defect: only the OPERATION_AUDIT record's field holds the code, the audit object none
	}
	b, _ := json.Marshal(obj)
	_, _, err := a.st.kc.AddRecord(ctx, a.st.auditApp, vals(map[string]any{
		"record_key": key, "record_type": "OPERATION_AUDIT", "run_id": ev.RunID, "result_code": ev.ResultCode,
		"reason": string(b), "resolved_at": ev.ArchivedAt,
	}))
	if err == nil || defect.ArchiveAuditFailureRecorded { // planted defect: a failed audit insert is reported RECORDED
		a.res.Audit = strp("RECORDED")
		return
	}
	if !kintoneapi.IsNetwork(err) && !kintoneapi.IsCode(err, "CB_VA01") || defect.ArchiveLostAuditNotReread { // planted defect: a lost audit response is taken as a refused insert
		a.pending("ARCHIVE_AUDIT_FAILED", "Run %s is archived but its audit %s was not written: %v", a.runID, ev.EventID, err)
		return
	}
	got, rerr := a.st.byKey(ctx, a.st.auditApp, key)
	switch {
	case rerr != nil:
		a.pending("ARCHIVE_AUDIT_FAILED", "Run %s is archived; the audit %s write failed (%v) and could not be re-read: %v", a.runID, ev.EventID, err, rerr)
		return
	case got == nil:
		a.pending("ARCHIVE_AUDIT_FAILED", "Run %s is archived but its audit %s was not written: %v", a.runID, ev.EventID, err)
		return
	}
	if defect.ArchiveAuditResponseNotCompared { // planted defect: any record under the key is taken as ours
		a.res.Audit = strp("RECORDED")
		return
	}
	var stored archiveAudit
	if jerr := json.Unmarshal([]byte(got.Str("reason")), &stored); jerr != nil || got.Str("run_id") != ev.RunID || !stored.sameEvent(ev) {
		a.pending("AUDIT_CONFLICT", "Run %s is archived but the audit record %s (record %s) is not this event's", a.runID, key, got.ID())
		return
	}
	a.res.Audit = strp("RECORDED")
}
