package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/kintoneapi"
	"github.com/ksqlflow/flowtest/sandbox/defect"
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
	if principal == "" {
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
	if !defect.CloseWithoutNetworkLock { // planted defect (issue 17): the CLOSE writes without holding the Network lock
		l, err := acquireLock(ctx, a.st, a.profile, a.n.NetworkID, a.res.EventID, a.c.ownerInstance(), a.lease, a.hb, a.c.now)
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
		if err := lock.release(ctx, StatusSuccess, "NORMAL"); err != nil {
			a.res.LockReleased = false
			if a.detail == "" {
				a.detail = "the network lock could not be released: " + err.Error()
			}
		}
	}
}

// tick is the fencing check before a write (a no-op without a lock: the planted defect).
func tick(ctx context.Context, lock *networkLock) error {
	if lock == nil {
		return nil
	}
	return lock.check(ctx)
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
	case run.Str("network_id") != a.n.NetworkID || run.Str("profile") != a.profile:
		a.reject("RUN_READ_FAILED", nil, "Run %s belongs to network %s (profile %s), not %s (profile %s)", a.runID, run.Str("network_id"), run.Str("profile"), a.n.NetworkID, a.profile)
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
	rev, err := a.st.kc.UpdateRecord(ctx, a.st.stateApp, run.ID(),
		vals(map[string]any{"lifecycle_status": "ARCHIVED", "updated_at": archivedAt}), run.Revision())
	if err != nil {
		again, rerr := findRunByID(ctx, a.st, a.runID)
		switch {
		case rerr == nil && again != nil && again.Str("lifecycle_status") == "ARCHIVED" && kintoneapi.IsCode(err, "GAIA_CO02"):
			a.res.Outcome, a.res.RunRevision = archAlreadyArchived, revOf(again)
			return
		case rerr == nil && again != nil && again.Str("lifecycle_status") == "ARCHIVED":
			rev = again.Revision() // the PUT's response was lost; it was written
		case kintoneapi.IsCode(err, "GAIA_CO02"):
			a.res.Outcome, a.detail = archUnconfirmed, "the Run changed while it was archived: "+err.Error()
			a.res.Code = strp("ARCHIVE_UNCONFIRMED")
			return
		default:
			a.reject("ARCHIVE_WRITE_FAILED", revOf(run), "archive Run %s: %v", a.runID, err)
			return
		}
	}
	r := atoi(rev)
	a.res.Outcome, a.res.RunRevision = archArchived, &r
	pending := func(code, format string, args ...any) {
		a.res.Audit, a.res.Code, a.detail = strp("PENDING"), strp(code), fmt.Sprintf(format, args...)
	}
	if err := tick(ctx, lock); err != nil {
		pending("LEASE_INTERRUPTED_AFTER_ARCHIVE", "%v", err)
		return
	}
	audit := map[string]any{
		"event_id": a.res.EventID, "event_type": "RUN_ARCHIVED", "run_id": a.runID, "result_code": "RUN_ARCHIVED",
		"requested_by": a.by, "reason": a.reason, "archived_at": archivedAt, "previous_status": status,
		"run_revision_before": before, "service_principal": a.principal,
	}
	b, _ := json.Marshal(audit)
	if _, _, err := a.st.insert(ctx, a.st.auditApp, "OP:"+a.res.EventID, vals(map[string]any{
		"record_type": "OPERATION_AUDIT", "run_id": a.runID, "result_code": "RUN_ARCHIVED", "reason": string(b), "resolved_at": archivedAt,
	})); err != nil {
		pending("ARCHIVE_AUDIT_FAILED", "Run %s is archived but its audit %s was not written: %v", a.runID, a.res.EventID, err)
		return
	}
	a.res.Audit = strp("RECORDED")
}
