package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// jobUnlockDomain: FlowNet's record-job-unlock (product-contract §1.7) — the operator
// attaching kSQL-Flow's LOCK_RECOVERY_RESULT to FlowNet's audit trail for one node — its
// RECORDED line and JOB_LOCK_FORCE_UNLOCK_RECORDED audit, and the JOB log rows of the run,
// which FlowNet never writes, noted by $revision and compared.
type jobUnlockDomain struct{}

func (d jobUnlockDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator records the job lock recovery of node "([^"]+)" with FlowNet as "([^"]+)"$`, d.records)
	reg.Step(`^the operator records the job lock recovery of node "([^"]+)" against node "([^"]+)" with FlowNet as "([^"]+)"$`, d.recordsAgainst)
	reg.Step(`^"([^"]+)" printed the RECORDED line of the job lock recovery$`, d.printedRecorded)
	reg.Step(`^exactly one JOB_LOCK_FORCE_UNLOCK_RECORDED audit of the run records what "([^"]+)" was given$`, d.oneAudit)
	reg.Step(`^the revisions of the run's JOB log rows are noted$`, d.noteJobLog)
	reg.Step(`^no JOB log row of the run changed since they were noted$`, d.jobLogUnchanged)
}

// jobUnlockState: the JOB log revisions noted last ($id → $revision).
type jobUnlockState struct {
	jobLog map[string]string
}

var jobUnlockKey = scenario.NewKey[jobUnlockState]("jobunlocks")

func (d jobUnlockDomain) records(ctx context.Context, node, name string) error {
	return d.recordsAgainst(ctx, node, node, name)
}

// recordsAgainst runs record-job-unlock with the recovery result of the job lock of node
// (whatever node it was) for node against: equal for the drill, another node for a
// result whose jobKey is not that node's.
func (jobUnlockDomain) recordsAgainst(ctx context.Context, node, against, name string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	result, err := jobLockKey.Of(sc.St).recoveryResult()
	if err != nil {
		return err
	}
	if key, _ := result["jobKey"].(string); key == "" {
		return fmt.Errorf("the recovery result of node %s names no jobKey: %s", node, compactJSON(result))
	}
	target, err := fx.Node(against)
	if err != nil {
		return err
	}
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return err
	}
	c, err := kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "record-job-unlock",
		Args: []string{"--result-file", "@result", "--run-id", id, "--node-id", target.ID, "--reason-file", "@reason",
			"--evidence-ref", evidenceRef(sc), "--stop-confirmed-by", confirmer(sc, fx)},
		Files: map[string]string{"result": string(raw) + "\n", "reason": fx.Scope().Reason("job lock of " + node + " recovered")}})
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

// recordedLine is record-job-unlock's success line (§1.7).
var recordedLine = regexp.MustCompile(`(?m)^RECORDED: (\S+) for (\S+) \((job_unlock_\S+)\)\.$`)

// printedRecorded: stdout is `RECORDED: <outcome> for <jobKey> (job_unlock_…).` with the
// outcome and jobKey of the recovery result it was given.
func (jobUnlockDomain) printedRecorded(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	result, err := jobLockKey.Of(sc.St).recoveryResult()
	if err != nil {
		return err
	}
	m := recordedLine.FindStringSubmatch(call.Stdout)
	if m == nil {
		return sc.St.On("text.record-job-unlock:\"RECORDED: \"").Assert("stdout of "+name, "a line RECORDED: <outcome> for <jobKey> (job_unlock_…).", strings.TrimSpace(call.Stdout), false)
	}
	return sc.St.On("text.record-job-unlock:\"RECORDED: \"").Equal("RECORDED line of "+name, fmt.Sprintf("%v for %v", result["outcome"], result["jobKey"]), m[1]+" for "+m[2])
}

// oneAudit: the run has exactly one JOB_LOCK_FORCE_UNLOCK_RECORDED audit, its event id is the
// one the RECORDED line named, and its fields are what the call was given (§1.7).
func (jobUnlockDomain) oneAudit(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	c, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return err
	}
	audits, runID, err := kit.OfTheRun(ctx, target.RoleAudit, kit.DecodeOperationAudit, "OPERATION_AUDIT")
	if err != nil {
		return err
	}
	var mine []kit.OperationAudit
	for _, a := range audits {
		if a.Event["event_type"] == "JOB_LOCK_FORCE_UNLOCK_RECORDED" {
			mine = append(mine, a)
		}
	}
	if err := sc.St.On("audit.OPERATION_AUDIT.result_code", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.run_id").Equal("JOB_LOCK_FORCE_UNLOCK_RECORDED audits of run "+runID, 1, len(mine)); err != nil {
		return err
	}
	a := mine[0]
	eventID := ""
	if m := recordedLine.FindStringSubmatch(c.Stdout); m != nil {
		eventID = m[3]
	}
	reason, err := c.ReasonGiven()
	if err != nil {
		return err
	}
	result, err := jobLockKey.Of(sc.St).recoveryResult()
	if err != nil {
		return err
	}
	node := c.ArgAfter("--node-id")
	want := map[string]string{
		"event_id": kit.OrNone(eventID), "record_key": "OP:" + kit.OrNone(eventID), "run_id": runID, "node_id": node,
		"job_id": jobIDOf(ctx, node), "service_principal": c.EnvValue("KSQL_FLOWNET_SERVICE_PRINCIPAL"),
		"requested_by": c.EnvValue("KSQL_FLOWNET_REQUESTED_BY"), "stop_confirmed_by": c.ArgAfter("--stop-confirmed-by"),
		"reason": reason, "evidence_ref": c.ArgAfter("--evidence-ref"),
		"lock_recovery_result": compactJSON(result),
	}
	seen := map[string]string{"record_key": a.RecordKey}
	for k := range want {
		if k == "record_key" {
			continue
		}
		switch v := a.Event[k].(type) {
		case string:
			seen[k] = v
		case map[string]any:
			seen[k] = compactJSON(v)
		case nil:
			seen[k] = "(absent)"
		default:
			seen[k] = fmt.Sprint(v)
		}
	}
	if err := sc.St.On("audit.OPERATION_AUDIT.record_key", jobUnlockSubjects...).Equal("fields of the JOB_LOCK_FORCE_UNLOCK_RECORDED audit", renderFields(want), renderFields(seen)); err != nil {
		return err
	}
	at, _ := a.Event["recorded_at"].(string)
	_, perr := time.Parse(time.RFC3339Nano, at)
	return sc.St.On("audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.recorded_at").Assert("recorded_at of the JOB_LOCK_FORCE_UNLOCK_RECORDED audit", "an RFC 3339 time", kit.OrNone(at), perr == nil)
}

// jobIDOf is the job id of the rendered node id ("(unknown node)" if the network has none).
// jobUnlockSubjects are the audit fields the JOB_LOCK_FORCE_UNLOCK_RECORDED assertion compares.
var jobUnlockSubjects = []string{"audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.event_id", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.run_id", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.node_id",
	"audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.job_id", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.service_principal",
	"audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.requested_by", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.stop_confirmed_by",
	"audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.reason", "audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.evidence_ref",
	"audit.JOB_LOCK_FORCE_UNLOCK_RECORDED.lock_recovery_result"}

func jobIDOf(ctx context.Context, renderedNode string) string {
	n, err := kit.FixturesOf(ctx).Rendered()
	if err != nil {
		return "(no network)"
	}
	for _, nd := range n.Nodes {
		if nd.ID == renderedNode {
			return nd.JobID
		}
	}
	return "(unknown node)"
}

func renderFields(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, "\n")
}

// jobLogRevisions reads the JOB log rows of the run's attempts ($id → $revision).
func jobLogRevisions(ctx context.Context) (map[string]string, error) {
	sc := kit.SceneOf(ctx)
	atts, err := kit.RunAttempts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, a := range atts {
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", a.NodeAttemptID))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.RecordID] = r.Revision
		}
	}
	return out, nil
}

func (jobUnlockDomain) noteJobLog(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	revs, err := jobLogRevisions(ctx)
	if err != nil {
		return err
	}
	if len(revs) == 0 {
		return fmt.Errorf("the run's attempts have no JOB log row to note")
	}
	jobUnlockKey.Of(sc.St).jobLog = revs
	sc.St.Note("JOB log revisions noted", renderRevisions(revs))
	return nil
}

func (jobUnlockDomain) jobLogUnchanged(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	noted := jobUnlockKey.Of(sc.St).jobLog
	if noted == nil {
		return fmt.Errorf("no JOB log revisions were noted first")
	}
	now, err := jobLogRevisions(ctx)
	if err != nil {
		return err
	}
	return sc.St.On("harness.snapshot.revisions").Equal("JOB log rows of the run ($id r$revision)", renderRevisions(noted), renderRevisions(now))
}

func renderRevisions(revs map[string]string) string {
	ids := make([]string, 0, len(revs))
	for id := range revs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return kit.Atoi(ids[i]) < kit.Atoi(ids[j]) })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + " r" + revs[id]
	}
	return strings.Join(parts, ", ")
}
