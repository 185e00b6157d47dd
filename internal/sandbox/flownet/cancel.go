package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// cancel-run (§1.8, §3.5): the Run-level hold. STOP writes (or re-opens) the CANCEL_REQUEST
// record `CANCEL:<run_id>` in REQUESTED; the scheduler accepts it at the next node boundary
// (the running node finishes, no later node starts). --release sets it RELEASED and never
// resumes the Run: that is a separate run-network call.

// holdDoc is the CANCEL_REQUEST's status_reason JSON. Every key is always written (null when
// unset), so a reader never has to tell a missing key from an empty one.
type holdDoc struct {
	State              string  `json:"state"`
	RequestedBy        *string `json:"requested_by"`
	Reason             *string `json:"reason"`
	RequestedAt        *string `json:"requested_at"`
	AcceptedAt         *string `json:"accepted_at"`
	ReleasedAt         *string `json:"released_at"`
	ReleaseReason      *string `json:"release_reason"`
	ReleaseRequestedBy *string `json:"release_requested_by"`
}

func (h holdDoc) json() string {
	b, _ := json.Marshal(h)
	return string(b)
}

// Hold states.
const (
	holdRequested = "REQUESTED"
	holdAccepted  = "ACCEPTED"
	holdReleased  = "RELEASED"
)

var cancelRunSpec = optionSpec{command: "cancel-run", values: []string{"--run-id", "--reason-file"},
	flags: []string{"--release"}, required: []string{"--run-id", "--reason-file"}}

// cancelRun is `cancel-run --run-id <id> [--release] --reason-file <path>`.
func (c *cli) cancelRun(args []string) int {
	o, reason, problems := parseWithReason(cancelRunSpec, args)
	if len(problems) > 0 {
		return c.argumentError("cancel-run", problems)
	}
	env, err := c.requireEnv("KSQL_FLOWNET_REQUESTED_BY")
	if err != nil {
		return c.fail(err, "CANCEL_RUN_FAILED")
	}
	st, err := c.newStore(false, 0)
	if err != nil {
		return c.fail(err, "CANCEL_RUN_FAILED")
	}
	h := holdRequest{st: st, runID: o.get("--run-id"), by: env["KSQL_FLOWNET_REQUESTED_BY"], reason: reason, now: c.now}
	state, rev, err := h.apply(context.Background(), o.flags["--release"])
	if err != nil {
		return c.fail(err, "CANCEL_RUN_FAILED")
	}
	fmt.Fprintf(c.stdout, "%s: CANCEL:%s (revision %s).\n", state, h.runID, orWord(rev, "none"))
	return 0
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}

// holdRequest is one STOP or RELEASE of a Run's hold.
type holdRequest struct {
	st         *store
	runID      string
	by, reason string
	now        func() time.Time
}

// apply performs the STOP (release false) or RELEASE and returns the hold's state and its
// record's $revision afterwards ("" when there is no record). A write that loses a revision
// race (the scheduler accepting the hold meanwhile) is decided again on a fresh read.
func (h holdRequest) apply(ctx context.Context, release bool) (state, rev string, err error) {
	run, err := findRunByID(ctx, h.st, h.runID)
	if err != nil {
		return "", "", err
	}
	if run == nil {
		return "", "", coded(codeRecordNotFound, "no Run with run_id %s", h.runID)
	}
	if release && defect.ReleaseRefusesArchivedRun && run.Str("lifecycle_status") == "ARCHIVED" {
		// planted defect: a hold left on an archived Run can never be released
		return "", "", coded("RUN_ARCHIVED", "Run %s is archived; its hold cannot be changed", h.runID)
	}
	for try := 0; ; try++ {
		rec, err := h.st.byKey(ctx, h.st.stateApp, "CANCEL:"+h.runID)
		if err != nil {
			return "", "", err
		}
		if release {
			state, rev, err = h.release(ctx, rec)
		} else {
			state, rev, err = h.stop(ctx, run, rec)
		}
		if errCode(err, "") != codeRevisionConflict || try == 2 {
			return state, rev, err
		}
	}
}

func decodeHold(rec kintoneapi.Record) holdDoc {
	var d holdDoc
	_ = json.Unmarshal([]byte(rec.Str("status_reason")), &d)
	return d
}

func (h holdRequest) stop(ctx context.Context, run, rec kintoneapi.Record) (string, string, error) {
	var cur holdDoc
	if rec != nil {
		cur = decodeHold(rec)
		if cur.State == holdRequested || cur.State == holdAccepted {
			return cur.State, rec.Revision(), nil // already held: nothing to write
		}
	}
	if IsTerminalRun(run.Str("status")) {
		return "", "", coded("RUN_ALREADY_TERMINAL", "Run %s is %s; there is nothing to stop", h.runID, run.Str("status"))
	}
	now := isoMillis(h.now())
	doc := holdDoc{State: holdRequested, RequestedBy: strp(h.by), Reason: strp(h.reason), RequestedAt: strp(now)}
	if rec == nil {
		_, rev, err := h.st.insert(ctx, h.st.stateApp, "CANCEL:"+h.runID, vals(map[string]any{
			"record_type": "CANCEL_REQUEST", "run_id": h.runID, "status_reason": doc.json(),
		}), "run_id")
		return holdRequested, rev, err
	}
	// Re-opening a RELEASED hold: a new STOP, so the previous acceptance and release go.
	rev, err := h.st.update(ctx, h.st.stateApp, rec.Str("record_key"), vals(map[string]any{"status_reason": doc.json()}), rec.Revision())
	return holdRequested, rev, err
}

func (h holdRequest) release(ctx context.Context, rec kintoneapi.Record) (string, string, error) {
	if rec == nil {
		return holdReleased, "", nil // no hold: nothing to release
	}
	doc := decodeHold(rec)
	if doc.State == holdReleased {
		return holdReleased, rec.Revision(), nil
	}
	now := isoMillis(h.now())
	if !defect.ReleaseKeepsHold {
		doc.State = holdReleased // planted defect: the release fields are written, the state is not
	}
	doc.ReleasedAt, doc.ReleaseReason, doc.ReleaseRequestedBy = strp(now), strp(h.reason), strp(h.by)
	rev, err := h.st.update(ctx, h.st.stateApp, rec.Str("record_key"), vals(map[string]any{"status_reason": doc.json()}), rec.Revision())
	return holdReleased, rev, err
}
