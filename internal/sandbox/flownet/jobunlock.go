package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// record-job-unlock (§1.7): attach the LOCK_RECOVERY_RESULT of kSQL-Flow's force-unlock-job
// to FlowNet's audit trail, for the node whose job lock the operator recovered. The job lock
// itself lives in kSQL-Flow's JOB log, which FlowNet never writes: this command only reads
// the Run and its Node State and appends one OPERATION_AUDIT. Every check comes before that
// one write, so every refusal writes nothing.
//
// Decisions where the contract is silent:
//   - Missing KSQL_FLOWNET_SERVICE_PRINCIPAL / KSQL_FLOWNET_REQUESTED_BY are CONFIG_MISSING
//     (as resolve-node); an unreadable or empty --reason-file and an empty --evidence-ref or
//     --stop-confirmed-by are AUDIT_INPUT_REQUIRED: they are the audit's inputs.
//   - The result file is checked before any read of kintone: unreadable, not exactly one JSON
//     object, kind ≠ LOCK_RECOVERY_RESULT, formatVersion ≠ 1, a jobKey that is not a
//     non-empty string, an outcome outside the five, or recordId/before against the
//     outcome's rule are all INVALID_LOCK_RECOVERY_RESULT. "Present" means a non-empty
//     string recordId and an object before; UNCONFIRMED allows either (kSQL-Flow prints it
//     both before and after it found the holder).
//   - An unknown Run, or a Run without a Node State for --node-id, is RECORD_NOT_FOUND (as
//     resolve-node); two Node States for the node are NODE_STATE_NOT_UNIQUE.
//   - The expected key is <profile>:<job_id> with the profile the Run was created under
//     (resolved_profile_snapshot.profile, else the Run's profile field) and the Node State's
//     job_id. KSQL_FLOWNET_PROFILE is not consulted (§6 does not list it for this command):
//     the node's lock is named by the Run's profile, whatever this shell is set to. A Run
//     that names no profile cannot confirm the key and is JOB_KEY_MISMATCH (fail closed).
//   - The node's status is not checked: a job lock can outlive a node that was later
//     resolved or re-run, and recording the recovery is always allowed.
//   - Every valid outcome is recorded, CONFLICT and UNCONFIRMED too (the audit says what
//     the operator did, not that the lock is gone); exit 0 with the RECORDED line.
//   - The OPERATION_AUDIT record carries record_key OP:<event_id>, run_id, result_code =
//     the outcome, resolved_at = recorded_at and, in reason, the audit object: event_id,
//     event_type, run_id, node_id, job_id, service_principal, requested_by,
//     stop_confirmed_by, reason, evidence_ref, recorded_at and lock_recovery_result (the
//     result file's object exactly as kSQL-Flow printed it, unknown fields kept).

var recordJobUnlockSpec = optionSpec{command: "record-job-unlock",
	values: []string{"--result-file", "--run-id", "--node-id", "--reason-file", "--evidence-ref", "--stop-confirmed-by"}}

func init() {
	recordJobUnlockSpec.required = recordJobUnlockSpec.values
}

const (
	codeAuditInputRequired       = "AUDIT_INPUT_REQUIRED"
	codeInvalidLockRecovery      = "INVALID_LOCK_RECOVERY_RESULT"
	codeJobKeyMismatch           = "JOB_KEY_MISMATCH"
	codeNodeStateNotUnique       = "NODE_STATE_NOT_UNIQUE"
	eventJobLockUnlockRecorded   = "JOB_LOCK_FORCE_UNLOCK_RECORDED"
	recordJobUnlockFallbackError = "RECORD_JOB_UNLOCK_FAILED"
)

// lockRecovery is what record-job-unlock needs of a LOCK_RECOVERY_RESULT; raw is the
// whole object for the audit.
type lockRecovery struct {
	jobKey, outcome string
	raw             json.RawMessage
}

type jobUnlockRequest struct {
	runID, nodeID                 string
	result                        lockRecovery
	reason, evidenceRef           string
	stopConfirmedBy               string
	servicePrincipal, requestedBy string
}

// recordJobUnlock is `record-job-unlock --result-file … --run-id … --node-id … …`.
func (c *cli) recordJobUnlock(args []string) int {
	o, problems := parseOptions(recordJobUnlockSpec, args)
	if len(problems) > 0 {
		return c.argumentError("record-job-unlock", problems)
	}
	env, err := c.requireEnv("KSQL_FLOWNET_SERVICE_PRINCIPAL", "KSQL_FLOWNET_REQUESTED_BY")
	if err != nil {
		return c.fail(err, recordJobUnlockFallbackError)
	}
	reason, err := readReasonFile(o.get("--reason-file"))
	if err != nil {
		return c.fail(coded(codeAuditInputRequired, "%v", err), "")
	}
	r := jobUnlockRequest{runID: o.get("--run-id"), nodeID: o.get("--node-id"), reason: reason,
		evidenceRef: strings.TrimSpace(o.get("--evidence-ref")), stopConfirmedBy: strings.TrimSpace(o.get("--stop-confirmed-by")),
		servicePrincipal: env["KSQL_FLOWNET_SERVICE_PRINCIPAL"], requestedBy: env["KSQL_FLOWNET_REQUESTED_BY"]}
	for name, v := range map[string]string{"reason": r.reason, "--evidence-ref": r.evidenceRef, "--stop-confirmed-by": r.stopConfirmedBy} {
		if v == "" {
			return c.fail(coded(codeAuditInputRequired, "%s is empty", name), "")
		}
	}
	if r.result, err = readLockRecovery(o.get("--result-file")); err != nil {
		return c.fail(err, "")
	}
	st, err := c.newStore(false, 0)
	if err != nil {
		return c.fail(err, recordJobUnlockFallbackError)
	}
	eventID, err := c.recordUnlock(context.Background(), st, r)
	if err != nil {
		return c.fail(err, recordJobUnlockFallbackError)
	}
	fmt.Fprintf(c.stdout, "RECORDED: %s for %s (%s).\n", r.result.outcome, r.result.jobKey, eventID)
	return 0
}

// Which outcomes carry the holder (recordId and before), per §1.7: NOT_FOUND never,
// RELEASED/NOT_RUNNING/CONFLICT always, UNCONFIRMED either way.
var holderRule = map[string]string{"RELEASED": "present", "NOT_RUNNING": "present", "CONFLICT": "present",
	"NOT_FOUND": "absent", "UNCONFIRMED": "either"}

// readLockRecovery reads and checks a LOCK_RECOVERY_RESULT file.
func readLockRecovery(path string) (lockRecovery, error) {
	invalid := func(format string, args ...any) (lockRecovery, error) {
		return lockRecovery{}, coded(codeInvalidLockRecovery, "--result-file %s: "+format, append([]any{path}, args...)...)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return invalid("cannot be read: %v", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil || doc == nil {
		return invalid("is not one JSON object")
	}
	var kind, jobKey, outcome string
	var version json.Number
	dec := func(field string, into any) bool {
		raw, ok := doc[field]
		if !ok {
			return false
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		return d.Decode(into) == nil
	}
	switch {
	case !dec("kind", &kind) || kind != "LOCK_RECOVERY_RESULT":
		return invalid("kind must be LOCK_RECOVERY_RESULT")
	case !dec("formatVersion", &version) || version.String() != "1":
		return invalid("formatVersion must be 1")
	case !dec("jobKey", &jobKey) || jobKey == "":
		return invalid("jobKey must be a non-empty string")
	case !dec("outcome", &outcome) || holderRule[outcome] == "":
		return invalid("outcome must be RELEASED, NOT_FOUND, NOT_RUNNING, CONFLICT or UNCONFIRMED")
	}
	var recordID string
	hasRecord := dec("recordId", &recordID) && recordID != ""
	var before map[string]any
	hasBefore := dec("before", &before) && before != nil
	recordNull, beforeNull := isNull(doc["recordId"]), isNull(doc["before"])
	switch holderRule[outcome] {
	case "absent":
		if !recordNull || !beforeNull {
			return invalid("outcome %s requires recordId and before to be null", outcome)
		}
	case "present":
		if !hasRecord || !hasBefore {
			return invalid("outcome %s requires recordId (a string) and before (an object)", outcome)
		}
	default:
		if (!recordNull && !hasRecord) || (!beforeNull && !hasBefore) {
			return invalid("recordId must be null or a string and before null or an object")
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return invalid("is not one JSON object")
	}
	return lockRecovery{jobKey: jobKey, outcome: outcome, raw: compact.Bytes()}, nil
}

// isNull reports whether a field is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// recordUnlock checks the result against the node and appends the audit; it returns the
// event id.
func (c *cli) recordUnlock(ctx context.Context, st *store, r jobUnlockRequest) (string, error) {
	run, err := findRunByID(ctx, st, r.runID)
	if err != nil {
		return "", err
	}
	if run == nil {
		return "", coded(codeRecordNotFound, "no Run with run_id %s", r.runID)
	}
	states, err := st.findExact(ctx, st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(r.runID)+`)`, "run_id", r.runID)
	if err != nil {
		return "", err
	}
	states = kintoneapi.Where(states, "node_id", r.nodeID)
	switch len(states) {
	case 0:
		return "", coded(codeRecordNotFound, "Run %s has no Node State for %s", r.runID, r.nodeID)
	case 1:
	default:
		return "", coded(codeNodeStateNotUnique, "Run %s has %d Node States for %s", r.runID, len(states), r.nodeID)
	}
	jobID := states[0].Str("job_id")
	profile := runProfile(run)
	if profile == "" {
		return "", coded(codeJobKeyMismatch, "Run %s records no profile, so the job key of node %s cannot be confirmed", r.runID, r.nodeID)
	}
	want := profile + ":" + jobID
	if !jobKeyMatches(r.result.jobKey, want, profile) {
		return "", coded(codeJobKeyMismatch, "the recovery result is for job key %s, but node %s of Run %s holds job key %s", r.result.jobKey, r.nodeID, r.runID, want)
	}

	eventID := "job_unlock_" + uuid.NewString()
	recordedAt := isoMillis(c.now())
	audit := map[string]any{
		"event_id": eventID, "event_type": eventJobLockUnlockRecorded,
		"run_id": r.runID, "node_id": r.nodeID, "job_id": jobID,
		"service_principal": r.servicePrincipal, "requested_by": r.requestedBy, "stop_confirmed_by": r.stopConfirmedBy,
		"reason": r.reason, "evidence_ref": r.evidenceRef, "recorded_at": recordedAt,
		"lock_recovery_result": r.result.raw,
	}
	b, err := json.Marshal(audit)
	if err != nil {
		return "", fmt.Errorf("encode the job-unlock audit: %w", err)
	}
	if _, _, err := st.insert(ctx, st.auditApp, "OP:"+eventID, vals(map[string]any{
		"record_type": "OPERATION_AUDIT", "run_id": r.runID, "result_code": r.result.outcome,
		"reason": string(b), "resolved_at": recordedAt,
	}), "run_id"); err != nil {
		return "", fmt.Errorf("write the job-unlock audit %s: %w", eventID, err)
	}
	return eventID, nil
}

// jobKeyMatches is the JOB_KEY_MISMATCH rule: the result must name exactly this node's key.
func jobKeyMatches(got, want, profile string) bool {
	if defect.RecordJobUnlockAcceptsForeignJobKey { // planted defect: only the profile half of the key is compared
		return strings.HasPrefix(got, profile+":")
	}
	return got == want
}

// runProfile is the profile a Run was created under: the profile of its
// resolved_profile_snapshot, the only place a NETWORK_RUN record keeps it (the real FlowNet
// writes no profile field on a Run); "" when the snapshot is missing or unreadable.
func runProfile(run kintoneapi.Record) string {
	var snap struct {
		Profile string `json:"profile"`
	}
	if s := run.Str("resolved_profile_snapshot"); s != "" && json.Unmarshal([]byte(s), &snap) == nil {
		return snap.Profile
	}
	return ""
}
