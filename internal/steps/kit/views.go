package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// Typed views of the records the scenarios read, decoded in this one place (field codes are
// product-contract §4). Steps compare fields of these, never raw field codes. A request's
// reason body is never decoded: it must not reach a scenario record.

type NetworkRun struct {
	RecordID, RecordKey, RunID, NetworkID, BusinessKey, Status, LifecycleStatus string
	AsOf                                                                        string // the logical date jobs get (scheduled runs)
	Revision                                                                    string // $revision
	FinishedAt                                                                  string
}

func DecodeNetworkRun(r kintoneapi.Record) NetworkRun {
	return NetworkRun{RecordID: r.ID(), RecordKey: r.Str("record_key"), RunID: r.Str("run_id"),
		NetworkID: r.Str("network_id"), BusinessKey: r.Str("business_key"), Status: r.Str("status"),
		LifecycleStatus: r.Str("lifecycle_status"), AsOf: r.Str("as_of"), Revision: r.Revision(),
		FinishedAt: r.Str("finished_at")}
}

type NodeState struct {
	RecordID, RunID, NodeID, JobID, Status, StatusReason, ActiveAttemptID string
	BlockedBy                                                             []string
	LatestAttemptNo                                                       string
	FinishedAt                                                            string
	Revision, BusinessRevision                                            string // $revision, and the record's own revision field
}

func decodeNodeState(r kintoneapi.Record) NodeState {
	return NodeState{RecordID: r.ID(), RunID: r.Str("run_id"), NodeID: r.Str("node_id"), JobID: r.Str("job_id"),
		Status: r.Str("status"), StatusReason: r.Str("status_reason"), ActiveAttemptID: r.Str("active_attempt_id"),
		BlockedBy: jsonList(r.Str("blocked_by")), LatestAttemptNo: r.Str("latest_attempt_no"),
		FinishedAt: r.Str("finished_at"), Revision: r.Revision(), BusinessRevision: r.Str("revision")}
}

type NodeAttempt struct {
	RecordID, RunID, NodeAttemptID, AttemptKey, InvocationID, NodeID, JobID, ExecutionID string
	Status, ResultCode                                                                   string
	AttemptNo                                                                            int
	ExecutionStartedAt, RunnerExecutionStartedAt, FinishedAt                             string
	ReadCount, WrittenCount                                                              string // NUMBER fields as read ("" when unset)
	ErrorMessage                                                                         string // error.message, or the CSV input audit summary (csv/csvreceipt.go)
}

func decodeNodeAttempt(r kintoneapi.Record) NodeAttempt {
	return NodeAttempt{RecordID: r.ID(), RunID: r.Str("run_id"), NodeAttemptID: r.Str("node_attempt_id"),
		AttemptKey: r.Str("attempt_key"), InvocationID: r.Str("invocation_id"), NodeID: r.Str("node_id"),
		JobID: r.Str("job_id"), ExecutionID: r.Str("execution_id"), Status: r.Str("status"),
		ResultCode: r.Str("result_code"), AttemptNo: Atoi(r.Str("attempt_no")),
		ExecutionStartedAt: r.Str("execution_started_at"), RunnerExecutionStartedAt: r.Str("runner_execution_started_at"),
		FinishedAt: r.Str("finished_at"), ReadCount: r.Str("read_count"), WrittenCount: r.Str("written_count"),
		ErrorMessage: r.Str("error_message")}
}

type RunInvocation struct {
	RecordID, RecordKey, RunID, InvocationID, Mode, Status, ResultCode, RequestedBy, Host string
	Selected, Preserved, Blocked                                                          []string
	FinishedAt                                                                            string
}

func DecodeRunInvocation(r kintoneapi.Record) RunInvocation {
	return RunInvocation{RecordID: r.ID(), RecordKey: r.Str("record_key"), RunID: r.Str("run_id"),
		InvocationID: r.Str("invocation_id"), Mode: r.Str("mode"), Status: r.Str("status"),
		ResultCode: r.Str("result_code"), RequestedBy: r.Str("requested_by"), Host: r.Str("host"),
		Selected: jsonList(r.Str("selected_node_ids")), Preserved: jsonList(r.Str("preserved_node_ids")),
		Blocked: jsonList(r.Str("blocked_node_ids")), FinishedAt: r.Str("finished_at")}
}

type NetworkLock struct {
	RecordID, Revision, RecordKey, LockKey, Profile, OwnerInvocationID  string
	LeaseExpiresAt, HeartbeatAt, Status, StatusReason, BusinessRevision string
	LeaseToken                                                          string // read only to check that a status output never shows it
}

func DecodeNetworkLock(r kintoneapi.Record) NetworkLock {
	return NetworkLock{RecordID: r.ID(), Revision: r.Revision(), RecordKey: r.Str("record_key"),
		LockKey: r.Str("lock_key"), Profile: r.Str("profile"), OwnerInvocationID: r.Str("owner_invocation_id"),
		LeaseExpiresAt: r.Str("lease_expires_at"), HeartbeatAt: r.Str("heartbeat_at"), Status: r.Str("status"),
		StatusReason: r.Str("status_reason"), BusinessRevision: r.Str("revision"), LeaseToken: r.Str("lease_token")}
}

type OperationAudit struct {
	RecordID, RecordKey, RunID, ResultCode, ResolvedAt string
	Event                                              map[string]any // the audit object (the reason field's JSON)
}

func DecodeOperationAudit(r kintoneapi.Record) OperationAudit {
	var ev map[string]any
	_ = json.Unmarshal([]byte(r.Str("reason")), &ev)
	return OperationAudit{RecordID: r.ID(), RecordKey: r.Str("record_key"), RunID: r.Str("run_id"),
		ResultCode: r.Str("result_code"), ResolvedAt: r.Str("resolved_at"), Event: ev}
}

// holdRecord is a Run's CANCEL_REQUEST record; State is its hold document's state (the
// status_reason JSON, product-contract §3.5).
type holdRecord struct {
	RecordID, RecordKey, RunID, State string
}

func DecodeHoldRecord(r kintoneapi.Record) holdRecord {
	var doc struct {
		State string `json:"state"`
	}
	_ = json.Unmarshal([]byte(r.Str("status_reason")), &doc)
	return holdRecord{RecordID: r.ID(), RecordKey: r.Str("record_key"), RunID: r.Str("run_id"), State: doc.State}
}

type attemptResolution struct {
	RecordID, RecordKey, AttemptID, ResolvedOutcome, EvidenceRef, ServicePrincipal, ApprovedBy, RequestedBy, ResolvedAt string
	EventType                                                                                                           string
	Detail                                                                                                              map[string]any // the resolution's inputs (the reason field's JSON)
	// Texts is every text of the record: each field's value and each string inside the reason
	// JSON, for what the contract says is recorded without saying under which key.
	Texts []string
}

func DecodeAttemptResolution(r kintoneapi.Record) attemptResolution {
	var detail map[string]any
	_ = json.Unmarshal([]byte(r.Str("reason")), &detail)
	return attemptResolution{RecordID: r.ID(), RecordKey: r.Str("record_key"), AttemptID: r.Str("attempt_id"),
		ResolvedOutcome: r.Str("resolved_outcome"), EvidenceRef: r.Str("evidence_ref"),
		ServicePrincipal: r.Str("service_principal"), ApprovedBy: r.Str("approved_by"),
		RequestedBy: r.Str("requested_by"), ResolvedAt: r.Str("resolved_at"),
		EventType: r.Str("event_type"), Detail: detail, Texts: recordTexts(r, detail)}
}

// recordTexts is every field value of r and every string nested in parsed (a field's JSON).
func recordTexts(r kintoneapi.Record, parsed any) []string {
	var out []string
	for code := range r {
		out = append(out, r.Str(code))
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(parsed)
	return out
}

// recordRevision is any state or audit record as a revision snapshot sees it: identity,
// $revision, and what ties it to a scope (its run, its attempt, the network an audit names).
type recordRevision struct {
	RecordID, Revision, RecordType, RecordKey, RunID, NodeAttemptID, AuditNetworkID string
}

func decodeRecordRevision(r kintoneapi.Record) recordRevision {
	rr := recordRevision{RecordID: r.ID(), Revision: r.Revision(), RecordType: r.Str("record_type"),
		RecordKey: r.Str("record_key"), RunID: r.Str("run_id"), NodeAttemptID: r.Str("node_attempt_id")}
	if rr.RecordType == "OPERATION_AUDIT" {
		var ev struct {
			NetworkID string `json:"network_id"`
		}
		_ = json.Unmarshal([]byte(r.Str("reason")), &ev)
		rr.AuditNetworkID = ev.NetworkID
	}
	return rr
}

// OperationRequest is a record of the operation-request app; its reason is not decoded.
type OperationRequest struct {
	RecordID, Revision, RequestType, RunID, NetworkID, BusinessKey, ScheduledFor, RerunFromNode string
	CancelRequested                                                                             bool
	RequestState, ClaimedAt, ClaimHeartbeatAt, ClaimedHost, ResultCode, ResultMessage           string
	Creator, CreatedAt                                                                          string
}

func DecodeOperationRequest(r kintoneapi.Record) OperationRequest {
	creator := ""
	if f, ok := r["作成者"]; ok {
		if m, ok := f.Value.(map[string]any); ok {
			creator, _ = m["code"].(string)
		}
	}
	return OperationRequest{RecordID: r.ID(), Revision: r.Revision(), RequestType: r.Str("request_type"),
		RunID: r.Str("run_id"), NetworkID: r.Str("network_id"), BusinessKey: r.Str("business_key"),
		ScheduledFor: r.Str("scheduled_for"), RerunFromNode: r.Str("rerun_from_node"),
		CancelRequested: len(jsonList(r.Str("cancel_requested"))) > 0, RequestState: r.Str("request_state"),
		ClaimedAt: r.Str("claimed_at"), ClaimHeartbeatAt: r.Str("claim_heartbeat_at"), ClaimedHost: r.Str("claimed_host"),
		ResultCode: r.Str("result_code"), ResultMessage: r.Str("result_message"),
		Creator: creator, CreatedAt: r.Str("作成日時")}
}

// requestFields is a whole request record as "the request is unchanged" compares it: every
// field and $revision as "<code>=<value>", sorted; the reason only by its length (its body
// must never be reported).
func DecodeRequestFields(r kintoneapi.Record) []string {
	var out []string
	for code := range r {
		v := r.Str(code)
		if code == "reason" {
			v = fmt.Sprintf("(%d characters)", len(v))
		}
		out = append(out, code+"="+v)
	}
	sort.Strings(out)
	return out
}

// dealRow is a record of the business app 案件管理 (read only, for expectations).
type dealRow struct {
	RecordID, ExpectedDate, Sales string // 受注予定日 (DATE), 売上 (NUMBER)
}

func DecodeDealRow(r kintoneapi.Record) dealRow {
	return dealRow{RecordID: r.ID(), ExpectedDate: r.Str("受注予定日"), Sales: r.Str("売上")}
}

type JobLogRow struct {
	RecordID, RecordType, Status, BatchID, CorrelationID, AttemptID, ExecutionID, JobID string
	JobKey, JobKeyDone, RunnerExecutionStartedAt, StartedAt, FinishedAt                 string
	AsOf                                                                                string
	Revision                                                                            string
}

func DecodeJobLogRow(r kintoneapi.Record) JobLogRow {
	return JobLogRow{RecordID: r.ID(), RecordType: r.Str("record_type"), Status: r.Str("status"),
		BatchID: r.Str("batch_id"), CorrelationID: r.Str("correlation_id"), AttemptID: r.Str("attempt_id"),
		ExecutionID: r.Str("execution_id"), JobID: r.Str("job_id"), JobKey: r.Str("job_key"),
		JobKeyDone: r.Str("job_key_done"), RunnerExecutionStartedAt: r.Str("runner_execution_started_at"),
		StartedAt: r.Str("started_at"), FinishedAt: r.Str("finished_at"), AsOf: r.Str("as_of"), Revision: r.Revision()}
}

// Match is one exact field condition of a read.
type Match struct{ Field, Value string }

// FieldIs is the condition that field holds exactly value.
func FieldIs(field, value string) Match { return Match{field, value} }

// ReadExact reads the records of app that satisfy every condition and decodes them. The query
// asks kintone with `in`, and the result is filtered exactly here: on a live tenant `=`/`in`
// on a non-unique text field is token matching, so a key that extends ours (another scope's
// `…_trial2`) would come back too.
func ReadExact[T any](ctx context.Context, sc *Scene, role string, decode func(kintoneapi.Record) T, conds ...Match) ([]T, error) {
	if len(conds) == 0 {
		return nil, fmt.Errorf("readExact: no condition (a whole-app read is never what a step means)")
	}
	var q []string
	for _, c := range conds {
		q = append(q, fmt.Sprintf("%s in (%s)", c.Field, Quote(c.Value)))
	}
	recs, err := sc.Reader.GetAll(ctx, sc.App(role), strings.Join(q, " and "), nil)
	if err != nil {
		return nil, fmt.Errorf("read %s records where %s: %w", role, strings.Join(q, " and "), err)
	}
	var out []T
	for _, r := range recs {
		ok := true
		for _, c := range conds {
			ok = ok && r.Str(c.Field) == c.Value
		}
		if ok {
			out = append(out, decode(r))
		}
	}
	return out, nil
}

func Quote(v string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
}

func Atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

func jsonList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return []string{"unparseable:" + s}
	}
	return out
}

func SortAttempts(atts []NodeAttempt) {
	sort.SliceStable(atts, func(i, j int) bool { return atts[i].AttemptNo < atts[j].AttemptNo })
}

func OrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func Presence(ok bool) string {
	if ok {
		return "present"
	}
	return "missing"
}

// CSVRow is a record of the CSV fixture app (test_key unique, test_value).
type CSVRow struct {
	RecordID, Key, Value string
}

func DecodeCSVRow(r kintoneapi.Record) CSVRow {
	return CSVRow{RecordID: r.ID(), Key: r.Str("test_key"), Value: r.Str("test_value")}
}

// recordText is one whole record as field code -> text, for scans that must look at every
// field (no path or cell value anywhere in an audit record).
type recordText struct {
	RecordID, RecordType string
	Fields               map[string]string
}

func DecodeRecordText(r kintoneapi.Record) recordText {
	t := recordText{RecordID: r.ID(), RecordType: r.Str("record_type"), Fields: map[string]string{}}
	for k := range r {
		t.Fields[k] = r.Str(k)
	}
	return t
}

// Str is v when it is a string, else "".
func Str(v any) string {
	s, _ := v.(string)
	return s
}

// FirstLineOrNone is the first line of s, trimmed, "(none)" when it is empty: an observed
// value of an assertion.
func FirstLineOrNone(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return OrNone(strings.TrimSpace(line))
}

// JSONField is one key of a printed JSON object as text: "(absent)" when the key is missing,
// "null" for JSON null (a union's fields are told apart by both).
func JSONField(j map[string]any, k string) string {
	v, ok := j[k]
	switch {
	case !ok:
		return "(absent)"
	case v == nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// TheLastInvocation is the run's latest RUN_INVOCATION; the run must have one.
func TheLastInvocation(ctx context.Context) (RunInvocation, error) {
	invs, err := Invocations(ctx)
	if err != nil {
		return RunInvocation{}, err
	}
	if err := SceneOf(ctx).St.On("audit.RUN_INVOCATION.run_id").Assert("invocations of the run", ">= 1", len(invs), len(invs) >= 1); err != nil {
		return RunInvocation{}, err
	}
	return invs[len(invs)-1], nil
}

// EncodeURIComponent is JavaScript's, the product's percent-encoding of the creator code:
// every UTF-8 byte but A–Z a–z 0–9 - _ . ! ~ * ' ( ) becomes %XX. (Go's url.PathEscape
// keeps more characters, so it cannot be the expectation.)
func EncodeURIComponent(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ParseBound reads "n", "lo..hi" or "lo.." (hi -1: unbounded).
func ParseBound(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "..")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("bound %q: %w", s, err)
	}
	if !isRange {
		return lo, lo, nil
	}
	if b == "" {
		return lo, -1, nil
	}
	if hi, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("bound %q: %w", s, err)
	}
	return lo, hi, nil
}
