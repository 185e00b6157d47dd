package flownet

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Run, Node State, Attempt and Invocation status values (product-contract §3).
const (
	StatusCreated   = "CREATED"
	StatusWaiting   = "WAITING"
	StatusRunning   = "RUNNING"
	StatusSuccess   = "SUCCESS"
	StatusFailed    = "FAILED"
	StatusBlocked   = "BLOCKED"
	StatusSkipped   = "SKIPPED"
	StatusCancelled = "CANCELLED"
	StatusUnknown   = "UNKNOWN"
)

// Attempt / Invocation result codes FlowNet itself produces.
const (
	CodePending              = "PENDING"
	CodeOK                   = "OK"
	CodePrepareFailed        = "PREPARE_FAILED"
	CodeNoExecutionResult    = "NO_EXECUTION_RESULT"
	CodeInvalidResult        = "INVALID_EXECUTION_RESULT"
	CodeForcedTermination    = "FORCED_TERMINATION"
	CodeAllSuccessNotMet     = "ALL_SUCCESS_NOT_SATISFIED"
	CodeNodeResultUnknown    = "NODE_RESULT_UNKNOWN"
	CodeNodeFailedOrBlocked  = "NODE_FAILED_OR_BLOCKED"
	CodeNodeCancelled        = "NODE_CANCELLED"
	CodeNodesDeferred        = "NODES_DEFERRED"
	CodeStopRequested        = "STOP_REQUESTED"
	CodeLeaseInterrupted     = "NETWORK_LEASE_INTERRUPTED"
	CodeSchedulerFailed      = "SCHEDULER_FAILED"
	CodeNoopAlreadySuccess   = "NOOP_ALREADY_SUCCESS"
	CodeInvalidArguments     = "INVALID_ARGUMENTS"
	retryBrakeThreshold      = 3
	kintoneDatetimeAllowance = 60 // seconds of DATETIME minute truncation every liveness check adds
)

// Aggregate computes a Run's status from its Node State statuses (§3.1, first rule wins).
func Aggregate(nodeStatuses []string, started bool) string {
	has := map[string]bool{}
	for _, s := range nodeStatuses {
		has[s] = true
	}
	switch {
	case has[StatusUnknown]:
		return StatusUnknown
	case has[StatusRunning]:
		return StatusRunning
	case has[StatusFailed] || has[StatusBlocked]:
		return StatusFailed
	case has[StatusCancelled]:
		return StatusCancelled
	}
	all := len(nodeStatuses) > 0
	for _, s := range nodeStatuses {
		if s != StatusSuccess {
			all = false
		}
	}
	if all {
		return StatusSuccess
	}
	if started && defect.DeferralMarksRunFailed {
		return StatusFailed // planted defect: a started Run with nodes left WAITING is taken as failed
	}
	if started {
		return StatusRunning
	}
	return StatusCreated
}

// IsTerminalRun reports whether a Run status is terminal (finished_at set).
func IsTerminalRun(s string) bool {
	switch s {
	case StatusSuccess, StatusFailed, StatusCancelled, StatusUnknown:
		return true
	}
	return false
}

// InvocationFinal maps the Run aggregate after scheduling to the Invocation's final status
// and result code (§1.3.2). Hold and lease interruptions are decided by the scheduler.
func InvocationFinal(aggregate string) (status, code string) {
	switch aggregate {
	case StatusSuccess:
		return StatusSuccess, CodeOK
	case StatusUnknown:
		return StatusUnknown, CodeNodeResultUnknown
	case StatusFailed:
		return StatusFailed, CodeNodeFailedOrBlocked
	case StatusCancelled:
		return StatusCancelled, CodeNodeCancelled
	default: // CREATED / RUNNING: nodes are left for a later Invocation
		if defect.DeferralWithoutNodesDeferred {
			return StatusCancelled, CodeNodeCancelled // planted defect: a deferral reported like a cancelled node
		}
		return StatusCancelled, CodeNodesDeferred
	}
}

// ExecutionResult is the subset of kSQL-Flow's Execution Result FlowNet reads (§7).
type ExecutionResult struct {
	FormatVersion         int            `json:"formatVersion"`
	Kind                  string         `json:"kind"`
	Contract              string         `json:"contract"`
	CorrelationID         string         `json:"correlationId"`
	AttemptID             string         `json:"attemptId"`
	ExecutionID           string         `json:"executionId"`
	JobID                 string         `json:"jobId"`
	Profile               string         `json:"profile"`
	Status                string         `json:"status"`
	ResultCode            string         `json:"resultCode"`
	ExecutionStarted      *bool          `json:"executionStarted"`
	ExitCode              *int           `json:"exitCode"`
	StartedAt             *string        `json:"startedAt"`
	FinishedAt            string         `json:"finishedAt"`
	DurationMs            *float64       `json:"durationMs"`
	ReadCount             *float64       `json:"readCount"`
	WrittenCount          *float64       `json:"writtenCount"`
	DeletedCount          *float64       `json:"deletedCount"`
	APICalls              *float64       `json:"apiCalls"`
	LastSuccessfulChunkNo *float64       `json:"lastSuccessfulChunkNo"`
	LastWrittenKey        *string        `json:"lastWrittenKey"`
	KsqlFlowVersion       string         `json:"ksqlFlowVersion"`
	EngineVersion         string         `json:"engineVersion"`
	Error                 *ResultError   `json:"error"`
	Extra                 map[string]any `json:"-"`
}

// ResultError is the error object of a non-SUCCESS result.
type ResultError struct {
	Category  string `json:"category"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

const executionContract = "ksql-flow.execution/v1"

// ValidateResult checks a result against the contract and the invocation it answers:
// schema, id echo, exit-code consistency and status/code consistency. A non-nil error
// means INVALID_EXECUTION_RESULT.
func ValidateResult(raw []byte, r *ExecutionResult, runID, attemptID, jobID string, exit int) error {
	if err := json.Unmarshal(raw, r); err != nil {
		return fmt.Errorf("result JSON does not parse: %w", err)
	}
	switch {
	case r.FormatVersion != 1 || r.Kind != "EXECUTION_RESULT" || r.Contract != executionContract:
		return fmt.Errorf("result is not a %s EXECUTION_RESULT v1", executionContract)
	case r.CorrelationID != runID || r.AttemptID != attemptID:
		return fmt.Errorf("result echoes correlationId %q attemptId %q, want %q %q", r.CorrelationID, r.AttemptID, runID, attemptID)
	case r.JobID != "" && r.JobID != jobID:
		return fmt.Errorf("result jobId %q differs from the expected %q", r.JobID, jobID)
	case r.ExecutionStarted == nil || r.ExitCode == nil || r.FinishedAt == "" || r.ResultCode == "":
		return fmt.Errorf("result lacks executionStarted, exitCode, finishedAt or resultCode")
	case *r.ExitCode != exit:
		return fmt.Errorf("result exitCode %d differs from the process exit %d", *r.ExitCode, exit)
	}
	if r.ExecutionID == "" || r.KsqlFlowVersion == "" || r.EngineVersion == "" {
		return fmt.Errorf("result lacks executionId, ksqlFlowVersion or engineVersion")
	}
	if r.DurationMs == nil || *r.DurationMs < 0 {
		return fmt.Errorf("result durationMs must be a non-negative number")
	}
	// §7: the counters are non-negative integers; lastSuccessfulChunkNo an integer >= 0 or null.
	for name, c := range map[string]*float64{"readCount": r.ReadCount, "writtenCount": r.WrittenCount, "deletedCount": r.DeletedCount, "apiCalls": r.APICalls} {
		if c == nil || *c < 0 || *c != math.Trunc(*c) {
			return fmt.Errorf("result %s must be a non-negative integer", name)
		}
	}
	if c := r.LastSuccessfulChunkNo; c != nil && (*c < 0 || *c != math.Trunc(*c)) {
		return fmt.Errorf("result lastSuccessfulChunkNo must be an integer >= 0 or null")
	}
	switch r.Status {
	case StatusSuccess:
		if exit != 0 || !*r.ExecutionStarted || r.Error != nil {
			return fmt.Errorf("SUCCESS result needs exit 0, executionStarted true and no error")
		}
	case StatusCancelled:
		if exit != 3 || r.Error == nil {
			return fmt.Errorf("CANCELLED result needs exit 3 and an error")
		}
	case StatusFailed:
		if (exit != 1 && exit != 2 && exit != 3 && exit != 5) || r.Error == nil {
			return fmt.Errorf("FAILED result needs exit 1/2/3/5 and an error")
		}
	default:
		return fmt.Errorf("result status %q is not SUCCESS, FAILED or CANCELLED", r.Status)
	}
	if err := fileReceiptsInvalid(raw); err != nil { // iosummary.go
		return err
	}
	want := map[string]int{"OK": 0, "NO_DATA": 0, "VALIDATION_ERROR": 1, "SQL_ERROR": 1, "ASSERT_FAILED": 2,
		"API_ERROR": 3, "AUTH_ERROR": 3, "EXECUTION_TIMEOUT": 3, "LOCK_UNAVAILABLE": 3, "INTERNAL_ERROR": 3,
		"CANCELLED": 3, "LOCK_CONFLICT": 5}
	if e, known := want[r.ResultCode]; known && e != exit {
		return fmt.Errorf("resultCode %s must come with exit %d, got %d", r.ResultCode, e, exit)
	}
	if (r.ResultCode == "LOCK_CONFLICT" || r.ResultCode == "VALIDATION_ERROR") && *r.ExecutionStarted {
		return fmt.Errorf("resultCode %s requires executionStarted false", r.ResultCode)
	}
	return nil
}

// Observation is what FlowNet saw of one kSQL-Flow run.
type Observation struct {
	LaunchFailed   bool // the process could not be started (durably confirmed)
	ForcedKill     bool // killed after the grace period
	ResultPresent  bool // the result file existed and was complete
	ResultInvalid  error
	Result         *ExecutionResult
	RunnerStarted  bool // the JOB log has runner_execution_started_at for this attempt
	FlowNetStarted bool // the Attempt's execution_started_at was written before launch
}

// observe turns what came back from one kSQL-Flow run into an Observation. A result file
// that is not complete JSON (the child died while writing it) counts as no result at all:
// §1.3.3 maps "no result file / incomplete JSON" to NO_EXECUTION_RESULT and keeps
// INVALID_EXECUTION_RESULT for a document that parses but breaks the contract.
// runnerStarted is whether the JOB log shows runner_execution_started_at (or could not be
// read, which must not be taken as "nothing ran").
func observe(rr runResult, runID, attemptID, jobID string, runnerStarted bool) Observation {
	obs := Observation{FlowNetStarted: true, LaunchFailed: rr.LaunchErr != nil, ForcedKill: rr.ForcedKill, RunnerStarted: runnerStarted}
	if rr.ResultRaw == nil || !json.Valid(rr.ResultRaw) {
		return obs
	}
	var res ExecutionResult
	obs.ResultPresent = true
	obs.ResultInvalid = ValidateResult(rr.ResultRaw, &res, runID, attemptID, jobID, rr.Exit)
	if obs.ResultInvalid == nil {
		obs.Result = &res
	}
	return obs
}

// Outcome is the Attempt's terminal status/result_code and the Node State it leads to.
type Outcome struct {
	AttemptStatus, AttemptCode string
	NodeStatus, NodeReason     string
}

// MapOutcome applies the Attempt outcome mapping of §1.3.3.
func MapOutcome(o Observation) Outcome {
	switch {
	case o.ForcedKill:
		return Outcome{StatusUnknown, CodeForcedTermination, StatusUnknown, CodeForcedTermination}
	case o.ResultPresent && o.ResultInvalid == nil && o.Result != nil:
		r := o.Result
		// defect.LockConflictFailsNode plants taking a conflict as an ordinary FAILED result.
		if r.ResultCode == "LOCK_CONFLICT" && !defect.LockConflictFailsNode {
			return Outcome{StatusCancelled, CodePrepareFailed, StatusWaiting, CodePrepareFailed}
		}
		return Outcome{r.Status, r.ResultCode, r.Status, r.ResultCode}
	case (o.LaunchFailed || !o.FlowNetStarted) && !o.RunnerStarted:
		// Nothing can have executed: the node goes back to WAITING for a later Invocation.
		return Outcome{StatusCancelled, CodePrepareFailed, StatusWaiting, CodePrepareFailed}
	case o.ResultPresent && o.ResultInvalid != nil:
		return Outcome{StatusUnknown, CodeInvalidResult, StatusUnknown, CodeInvalidResult}
	default:
		if defect.KilledChildFailed {
			// planted defect: a child that died without a result is taken as failed
			return Outcome{StatusFailed, CodeNoExecutionResult, StatusFailed, CodeNoExecutionResult}
		}
		return Outcome{StatusUnknown, CodeNoExecutionResult, StatusUnknown, CodeNoExecutionResult}
	}
}

// OrphanOutcome maps a JOB-log status found for an orphaned RUNNING Attempt (§1.3.2).
func OrphanOutcome(jobLogStatus string, found bool) Outcome {
	if !found {
		return Outcome{StatusUnknown, CodeNoExecutionResult, StatusUnknown, CodeNoExecutionResult}
	}
	m := map[string][2]string{
		"SUCCESS":   {StatusSuccess, "OK"},
		"NO_DATA":   {StatusSuccess, "NO_DATA"},
		"FAILED":    {StatusFailed, "FAILED"},
		"ABORTED":   {StatusFailed, "ASSERT_FAILED"},
		"TIMEOUT":   {StatusFailed, "EXECUTION_TIMEOUT"},
		"CANCELLED": {StatusCancelled, "CANCELLED"},
	}
	if v, ok := m[jobLogStatus]; ok {
		return Outcome{v[0], v[1], v[0], v[1]}
	}
	return Outcome{StatusUnknown, CodeNoExecutionResult, StatusUnknown, CodeNoExecutionResult}
}

// AttemptSummary is the part of an Attempt the retry brake reads.
type AttemptSummary struct {
	AttemptNo  int
	Status     string
	ResultCode string
}

// RetryBrake walks a node's Attempts from the highest attempt_no down, skipping
// CANCELLED / PREPARE_FAILED ones, and counts consecutive FAILED Attempts with the same
// non-empty result_code (§1.3.4). It returns that code and count when the count reaches 3.
func RetryBrake(attempts []AttemptSummary) (code string, count int, fires bool) {
	sorted := append([]AttemptSummary(nil), attempts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].AttemptNo > sorted[j].AttemptNo })
	for _, a := range sorted {
		if a.Status == StatusCancelled || a.ResultCode == CodePrepareFailed {
			if defect.RetryBrakeStopsAtCancelled {
				break // planted defect: a deferred Attempt ends the walk instead of being skipped
			}
			continue
		}
		// defect.RetryBrakeIgnoresResultCode plants a brake that counts consecutive
		// FAILED Attempts whatever their result_code.
		if a.Status != StatusFailed || a.ResultCode == "" || (code != "" && a.ResultCode != code && !defect.RetryBrakeIgnoresResultCode) {
			break
		}
		if code == "" {
			code = a.ResultCode
		}
		count++
	}
	// defect.RetryBrakeNeverFires plants a brake that counts but never holds a node back.
	return code, count, count >= retryBrakeThreshold && !defect.RetryBrakeNeverFires
}

// RetryBrakeReason is the Node State status_reason of a braked node.
func RetryBrakeReason(code string, count int) string {
	return fmt.Sprintf("RETRY_BRAKE:%sx%d", code, count)
}
