package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// resolve-node (§1.6): settle an UNKNOWN node, or a FAILED non-idempotent one, with evidence.
// It writes one ATTEMPT_RESOLUTION audit (every input in its reason JSON) and then moves the
// Node State to the outcome; the Attempt itself is never modified. Every refusal comes
// before the first write.

var resolveNodeSpec = optionSpec{command: "resolve-node",
	values: []string{"--run-id", "--node-id", "--to", "--reason-file", "--evidence-ref",
		"--stop-confirmed-by", "--stop-evidence-ref", "--approved-by"},
	flags:    []string{"--manual-completion", "--compensation"},
	required: []string{"--run-id", "--node-id", "--to", "--reason-file", "--evidence-ref", "--stop-confirmed-by", "--stop-evidence-ref"}}

// Resolution types (the Node State's status_reason afterwards).
const (
	resolutionOutcomeConfirmed  = "OUTCOME_CONFIRMED"
	resolutionManualCompletion  = "NODE_MANUAL_COMPLETION_CONFIRMED"
	resolutionCompensationDone  = "NODE_COMPENSATION_COMPLETED"
	codeDistinctApproverMissing = "DISTINCT_APPROVER_REQUIRED"
)

type resolveRequest struct {
	runID, nodeID, to             string
	manual, compensation          bool
	reason, evidenceRef           string
	stopConfirmedBy, stopEvidence string
	approvedBy                    string
	servicePrincipal, requestedBy string
}

// resolveNode is `resolve-node --run-id … --node-id … --to SUCCESS|FAILED|CANCELLED …`.
func (c *cli) resolveNode(args []string) int {
	o, problems := parseOptions(resolveNodeSpec, args)
	to := o.get("--to")
	if _, given := o.values["--to"]; given && to != StatusSuccess && to != StatusFailed && to != StatusCancelled {
		problems = append(problems, "--to must be SUCCESS, FAILED or CANCELLED")
	}
	if o.flags["--manual-completion"] && o.flags["--compensation"] {
		problems = append(problems, "--manual-completion and --compensation cannot be combined")
	}
	if len(problems) > 0 {
		return c.argumentError("resolve-node", problems)
	}
	env, err := c.requireEnv("KSQL_FLOWNET_SERVICE_PRINCIPAL", "KSQL_FLOWNET_REQUESTED_BY")
	if err != nil {
		return c.fail(err, "RESOLVE_NODE_FAILED")
	}
	reason, err := readReasonFile(o.get("--reason-file"))
	if err != nil {
		return c.fail(coded("AUDIT_INPUT_REQUIRED", "%v", err), "")
	}
	r := resolveRequest{runID: o.get("--run-id"), nodeID: o.get("--node-id"), to: to,
		manual: o.flags["--manual-completion"], compensation: o.flags["--compensation"],
		reason: reason, evidenceRef: o.get("--evidence-ref"), stopConfirmedBy: o.get("--stop-confirmed-by"),
		stopEvidence: o.get("--stop-evidence-ref"), approvedBy: strings.TrimSpace(o.get("--approved-by")),
		servicePrincipal: env["KSQL_FLOWNET_SERVICE_PRINCIPAL"], requestedBy: env["KSQL_FLOWNET_REQUESTED_BY"]}
	if err := r.check(); err != nil {
		return c.fail(err, "RESOLVE_NODE_FAILED")
	}
	st, err := c.newStore(false, 0)
	if err != nil {
		return c.fail(err, "RESOLVE_NODE_FAILED")
	}
	rev, err := c.resolve(context.Background(), st, r)
	if err != nil {
		return c.fail(err, "RESOLVE_NODE_FAILED")
	}
	fmt.Fprintf(c.stdout, "RESOLVED: %s/%s -> %s (revision %d).\n", r.runID, r.nodeID, r.to, rev)
	return 0
}

// check applies the rules that need no record: audit inputs and the outcome/mode pairing.
func (r resolveRequest) check() error {
	for name, v := range map[string]string{"reason": r.reason, "--evidence-ref": r.evidenceRef,
		"--stop-confirmed-by": r.stopConfirmedBy, "--stop-evidence-ref": r.stopEvidence} {
		if strings.TrimSpace(v) == "" {
			return coded("AUDIT_INPUT_REQUIRED", "%s is empty", name)
		}
	}
	switch {
	case r.to == StatusSuccess && !r.manual:
		return coded("MANUAL_COMPLETION_REQUIRED", "--to SUCCESS needs --manual-completion (the node's work was completed by hand)")
	case r.manual && r.to != StatusSuccess:
		return coded("MANUAL_COMPLETION_REQUIRES_SUCCESS", "--manual-completion resolves to SUCCESS only")
	case r.compensation && r.to == StatusSuccess:
		return coded("COMPENSATION_CANNOT_SUCCEED", "a compensated node ends FAILED or CANCELLED, never SUCCESS")
	}
	return nil
}

func (r resolveRequest) resolutionType() string {
	switch {
	case r.manual:
		return resolutionManualCompletion
	case r.compensation:
		return resolutionCompensationDone
	}
	return resolutionOutcomeConfirmed
}

// resolve reads the Run, the Node State and its latest Attempt, applies the eligibility and
// approver rules, writes the resolution and moves the Node State. It returns the Node State's
// business revision afterwards.
func (c *cli) resolve(ctx context.Context, st *store, r resolveRequest) (int, error) {
	ns, err := resolvableNodeState(ctx, st, r)
	if err != nil {
		return 0, err
	}
	att, err := currentAttempt(ctx, st, r, ns.Str("status"))
	if err != nil {
		return 0, err
	}

	resolvedAt := isoMillis(c.now())
	kind := r.resolutionType()
	// The reason JSON holds what the app has no field for (the real FlowNet 1.0.0 writes
	// these five keys and no more): the resolution type, the reason, the stop confirmation and
	// the time.
	doc := map[string]any{
		"resolution_type": kind, "reason": r.reason, "stop_confirmed_by": r.stopConfirmedBy,
		"stop_evidence_ref": r.stopEvidence, "resolved_at": resolvedAt,
	}
	b, _ := json.Marshal(doc)
	if _, _, err := st.insert(ctx, st.auditApp, resolutionKey(att.Str("node_attempt_id"), resolvedAt), vals(map[string]any{
		"record_type": "ATTEMPT_RESOLUTION", "event_type": "ATTEMPT_RESOLVED", "attempt_id": att.Str("node_attempt_id"),
		"resolved_outcome": r.to, "evidence_ref": r.evidenceRef, "service_principal": r.servicePrincipal,
		"approved_by": r.approvedBy, "requested_by": r.requestedBy, "resolved_at": resolvedAt, "reason": string(b),
	}), "attempt_id"); err != nil {
		return 0, fmt.Errorf("write the resolution of %s: %w", r.nodeID, err)
	}
	next := atoi(ns.Str("revision")) + 1
	if _, err := st.update(ctx, st.stateApp, ns.Str("record_key"), vals(map[string]any{
		"status": r.to, "status_reason": kind, "active_attempt_id": "", "blocked_by": "[]",
		"finished_at": resolvedAt, "updated_at": resolvedAt, "revision": next,
	}), ns.Revision()); err != nil {
		return 0, fmt.Errorf("the resolution of %s is recorded but its Node State was not moved: %w", r.nodeID, err)
	}
	return next, nil
}

// resolvableNodeState reads the Run's one Node State of the node and checks that it may be
// resolved: UNKNOWN, or FAILED and not idempotent, and for a non-idempotent SUCCESS an
// approver distinct from the requester and the service principal.
func resolvableNodeState(ctx context.Context, st *store, r resolveRequest) (kintoneapi.Record, error) {
	run, err := findRunByID(ctx, st, r.runID)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, coded(codeRecordNotFound, "no Run with run_id %s", r.runID)
	}
	states, err := st.findExact(ctx, st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(r.runID)+`)`, "run_id", r.runID)
	if err != nil {
		return nil, err
	}
	var mine []int
	for i, s := range states {
		if s.Str("node_id") == r.nodeID {
			mine = append(mine, i)
		}
	}
	switch len(mine) {
	case 0:
		return nil, coded(codeRecordNotFound, "Run %s has no Node State for %s", r.runID, r.nodeID)
	case 1:
	default:
		return nil, coded("NODE_STATE_NOT_UNIQUE", "Run %s has %d Node States for %s", r.runID, len(mine), r.nodeID)
	}
	ns := states[mine[0]]
	status, idempotent := ns.Str("status"), ns.Str("idempotent") != "false"
	if status != StatusUnknown && !(status == StatusFailed && !idempotent) {
		return nil, coded("NODE_NOT_RESOLVABLE", "node %s is %s (idempotent %t); only UNKNOWN nodes and FAILED non-idempotent ones are resolved", r.nodeID, status, idempotent)
	}
	if !idempotent && r.to == StatusSuccess && !defect.ApproverCheckMissing && // the planted defect skips the approver rule
		(r.approvedBy == "" || r.approvedBy == r.requestedBy || r.approvedBy == r.servicePrincipal) {
		return nil, coded(codeDistinctApproverMissing, "node %s is not idempotent: completing it by hand needs --approved-by someone other than the requester (%s) and the service principal (%s)",
			r.nodeID, r.requestedBy, r.servicePrincipal)
	}
	return ns, nil
}

// currentAttempt is the node's one highest-numbered Attempt, which must be in the Node
// State's status.
func currentAttempt(ctx context.Context, st *store, r resolveRequest, status string) (kintoneapi.Record, error) {
	atts, err := st.findExact(ctx, st.auditApp, `record_type in ("NODE_ATTEMPT") and run_id in (`+q(r.runID)+`)`, "run_id", r.runID)
	if err != nil {
		return nil, err
	}
	latestNo, count := 0, 0
	var latest int
	for i, a := range atts {
		if a.Str("node_id") != r.nodeID {
			continue
		}
		switch no := atoi(a.Str("attempt_no")); {
		case no > latestNo:
			latestNo, count, latest = no, 1, i
		case no == latestNo:
			count++
		}
	}
	if count != 1 {
		return nil, coded("CURRENT_ATTEMPT_NOT_UNIQUE", "node %s has %d attempts numbered %d", r.nodeID, count, latestNo)
	}
	att := atts[latest]
	if att.Str("status") != status {
		return nil, coded("STATE_ATTEMPT_MISMATCH", "node %s is %s but its attempt %d is %s", r.nodeID, status, latestNo, att.Str("status"))
	}
	return att, nil
}

// nullable is s, or JSON null when s is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
