package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// What the poller does with a claimed request: per-type pre-checks, the child command, and
// the classification of its result into (request_state, result_code, result_message).

// childOutputCap bounds what the poller keeps of a child's stdout and stderr, each.
const childOutputCap = 64 << 10

// childResult is what one child command returned.
type childResult struct {
	exit           int
	stdout, stderr string
	spawnErr       error // the child could not be started
	execErr        error // it ended without an exit code (a signal)
}

// cappedBuffer keeps the first childOutputCap bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := childOutputCap - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// runChild runs this FlowNet CLI again with args: children inherit the poller's whole
// environment, plus extra (later entries win).
func (p *poller) runChild(ctx context.Context, extra []string, args ...string) childResult {
	if len(p.c.self) == 0 {
		return childResult{spawnErr: errors.New("no FlowNet executable to start children with")}
	}
	cmd := exec.CommandContext(ctx, p.c.self[0], append(append([]string(nil), p.c.self[1:]...), args...)...)
	cmd.Env = append(append([]string(nil), p.c.environ...), extra...)
	var out, errOut cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		return childResult{spawnErr: err}
	}
	err := cmd.Wait()
	res := childResult{exit: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || res.exit < 0) {
		res.execErr = err
	}
	return res
}

// firstErrorLine is the child's `Error [..]` line (or its first stderr line), for messages.
func (r childResult) firstErrorLine() string {
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Error [") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[0])
}

// status runs `status <network> --profile <p> <flag> <value> --json`. found is false when
// the child said RECORD_NOT_FOUND (the Run is not in that network); any other failure is a
// STATUS_UNAVAILABLE error.
func (p *poller) status(ctx context.Context, networkID, flag, value string) (*statusDoc, bool, error) {
	res := p.runChild(ctx, nil, "status", networkID, "--profile", p.pc.profile, flag, value, "--json")
	if res.spawnErr == nil && res.execErr == nil && res.exit == 1 && strings.HasPrefix(strings.TrimSpace(res.stderr), "Error ["+codeRecordNotFound+"]") {
		return nil, false, nil
	}
	if res.spawnErr != nil || res.execErr != nil || res.exit != 0 {
		return nil, false, coded("STATUS_UNAVAILABLE", "status of network %s could not be read (exit %d)", networkID, res.exit)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		return nil, false, coded("STATUS_UNAVAILABLE", "status of network %s printed no JSON", networkID)
	}
	return &doc, true, nil
}

// runMatch is the one allow-listed network a run id was found in.
type runMatch struct {
	entry *allowEntry
	doc   *statusDoc
	run   *statusRun
}

// resolveRun looks a run id up in every allow-listed network: RUN_NOT_FOUND,
// RUN_ID_AMBIGUOUS or STATUS_UNAVAILABLE unless exactly one has it.
func (p *poller) resolveRun(ctx context.Context, runID string) (runMatch, error) {
	var found []runMatch
	for i := range p.pc.networks {
		e := &p.pc.networks[i]
		doc, ok, err := p.status(ctx, e.NetworkID, "--run-id", runID)
		if err != nil {
			return runMatch{}, err
		}
		if ok && len(doc.Runs) == 1 {
			found = append(found, runMatch{entry: e, doc: doc, run: doc.Runs[0]})
		}
	}
	switch len(found) {
	case 0:
		return runMatch{}, coded("RUN_NOT_FOUND", "Run %s was found in none of the %d allow-listed networks", runID, len(p.pc.networks))
	case 1:
		return found[0], nil
	}
	var nets []string
	for _, m := range found {
		nets = append(nets, m.entry.NetworkID)
	}
	return runMatch{}, coded("RUN_ID_AMBIGUOUS", "Run %s was found in %d networks: %s", runID, len(found), strings.Join(nets, ", "))
}

// liveOwner: the Run is LIVE, or the network lock is owned by one of its Invocations and the
// lease (plus the 60 s DATETIME allowance) has not run out.
func liveOwner(doc *statusDoc, run *statusRun, now time.Time) bool {
	if run.Activity == "LIVE" {
		return true
	}
	if doc.Lock == nil || doc.Lock.LeaseExpiresAt == nil {
		return false
	}
	owned := false
	for _, inv := range run.Invocations {
		owned = owned || inv.InvocationID == doc.Lock.OwnerInvocationID
	}
	exp, ok := parseTime(*doc.Lock.LeaseExpiresAt)
	return owned && ok && !now.After(exp.Add(kintoneDatetimeAllowance*time.Second))
}

// outcome builders
func rejected(code, format string, args ...any) (string, string, string) {
	return stateRejected, code, fmt.Sprintf(format, args...)
}

// process decides a claimed request. It never returns ACCEPTED.
func (p *poller) process(ctx context.Context, req opRequest) (state, code, msg string) {
	by, err := req.requestedBy()
	if err != nil {
		return rejected("REQUESTED_BY_INVALID", "%s", err.Error())
	}
	if req.typ() == reqStart {
		return p.start(ctx, req, by)
	}
	m, err := p.resolveRun(ctx, req.str("run_id"))
	if err != nil {
		return rejected(errCode(err, "STATUS_UNAVAILABLE"), "%s", err.Error())
	}
	run, now := m.run, p.c.now()
	live := liveOwner(m.doc, run, now)
	switch req.typ() {
	case reqRerun:
		switch {
		case run.Status != StatusCreated && run.Status != StatusRunning && run.Status != StatusFailed && run.Status != StatusCancelled:
			return rejected("RUN_STATUS_NOT_RERUNNABLE", "Run %s is %s; RERUN needs CREATED, RUNNING, FAILED or CANCELLED", run.RunID, run.Status)
		case run.LifecycleStatus != "ACTIVE" || !run.ResumeAllowed:
			return rejected("RUN_NOT_RESUMABLE", "Run %s is not resumable (lifecycle_status=%s, resume_allowed=%t)", run.RunID, run.LifecycleStatus, run.ResumeAllowed)
		case run.Hold != nil || run.Activity == "STOPPED":
			return rejected("RUN_ON_HOLD", "Run %s is on hold; RELEASE it first", run.RunID)
		case live && !defect.RerunSkipsLiveCheck:
			return rejected("RUN_LIVE", "Run %s has a live invocation; wait for it to finish", run.RunID)
		}
		args := []string{"run-network", m.entry.DefinitionPath, "--resume-run", run.RunID}
		if node := req.str("rerun_from_node"); node != "" && !defect.RerunFromNodeDropped {
			args = append(args, "--rerun-from", node)
		}
		return classifyRun(p.runChild(ctx, []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}, append(args, "--json")...), false)
	case reqStop:
		switch {
		case IsTerminalRun(run.Status):
			return rejected("RUN_TERMINAL", "Run %s is %s; there is nothing to stop", run.RunID, run.Status)
		case run.Activity == "STOPPED":
			return rejected("RUN_ALREADY_ON_HOLD", "Run %s is already on hold", run.RunID)
		}
		return p.cancelRun(ctx, req, by, run.RunID, false)
	case reqRelease:
		if run.Hold == nil {
			return rejected("RUN_NOT_ON_HOLD", "Run %s has no hold to release", run.RunID)
		}
		if defect.ReleaseRefusesTerminalRun && IsTerminalRun(run.Status) { // planted defect: a hold left on a terminal Run cannot be released
			return rejected("RUN_TERMINAL", "Run %s is %s; there is nothing to release", run.RunID, run.Status)
		}
		return p.cancelRun(ctx, req, by, run.RunID, true)
	case reqClose:
		switch {
		case run.LifecycleStatus == "ARCHIVED":
			return stateDone, "RUN_ALREADY_ARCHIVED", fmt.Sprintf("Run %s is already archived; nothing was done", run.RunID)
		case run.Status == StatusSuccess:
			return rejected("RUN_STATUS_NOT_CLOSABLE", "Run %s is SUCCESS; only FAILED or CANCELLED Runs can be closed", run.RunID)
		case run.Status == StatusUnknown:
			return rejected("RUN_UNKNOWN_NOT_CLOSABLE", "Run %s is UNKNOWN; resolve its nodes first", run.RunID)
		case run.Status == StatusCreated || run.Status == StatusRunning:
			return rejected("RUN_NOT_TERMINAL", "Run %s is %s; only terminal Runs can be closed", run.RunID, run.Status)
		case run.Hold != nil:
			return rejected("RUN_ON_HOLD", "Run %s is on hold; RELEASE it first", run.RunID)
		case live:
			return rejected("RUN_LIVE", "Run %s has a live invocation", run.RunID)
		}
		return p.archiveRun(ctx, req, by, m.entry.DefinitionPath, run.RunID)
	}
	return rejected("REQUEST_INVALID", "request type %q is not supported", req.typ())
}

// cancelRun runs `cancel-run --run-id <id> [--release] --reason-file <tmp>`.
func (p *poller) cancelRun(ctx context.Context, req opRequest, by, runID string, release bool) (string, string, string) {
	path, err := writeReasonFile(req.str("reason"))
	if err != nil {
		return rejected("CHILD_SPAWN_FAILED", "the reason file could not be written: %v", err)
	}
	defer os.Remove(path)
	args := []string{"cancel-run", "--run-id", runID}
	if release {
		args = append(args, "--release")
	}
	res := p.runChild(ctx, []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}, append(args, "--reason-file", path)...)
	switch {
	case res.spawnErr != nil:
		return rejected("CHILD_SPAWN_FAILED", "cancel-run could not be started: %v", res.spawnErr)
	case res.execErr != nil:
		return rejected("CHILD_EXECUTION_FAILED", "cancel-run ended abnormally: %v", res.execErr)
	case res.exit != 0:
		return rejected("CANCEL_RUN_REJECTED", "cancel-run exited %d: %s", res.exit, res.firstErrorLine())
	}
	out := strings.TrimSpace(strings.SplitN(strings.TrimSpace(res.stdout), "\n", 2)[0])
	if release {
		if defect.ReleaseResumesRun {
			p.runChild(ctx, []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}, "run-network", p.definitionOf(ctx, runID), "--resume-run", runID, "--json") // planted defect: RELEASE also resumes the Run
		}
		return stateDone, "RELEASED", out
	}
	return stateDone, "STOP_REQUESTED", out
}

// definitionOf is the allow-listed definition a run belongs to ("" when unknown).
func (p *poller) definitionOf(ctx context.Context, runID string) string {
	if m, err := p.resolveRun(ctx, runID); err == nil {
		return m.entry.DefinitionPath
	}
	return ""
}

// archiveRun runs `archive-run <definition> --run-id <id> --reason-file <tmp>` and maps its
// JSON outcome (§1.9).
func (p *poller) archiveRun(ctx context.Context, req opRequest, by, def, runID string) (string, string, string) {
	path, err := writeReasonFile(req.str("reason"))
	if err != nil {
		return rejected("CHILD_SPAWN_FAILED", "the reason file could not be written: %v", err)
	}
	defer os.Remove(path)
	res := p.runChild(ctx, []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}, "archive-run", def, "--run-id", runID, "--reason-file", path)
	if res.spawnErr != nil {
		return rejected("CHILD_SPAWN_FAILED", "archive-run could not be started: %v", res.spawnErr)
	}
	if res.execErr != nil {
		return rejected("CHILD_EXECUTION_FAILED", "archive-run ended abnormally: %v", res.execErr)
	}
	return classifyArchive(res.stdout, res.exit, res.firstErrorLine())
}

// classifyArchive maps archive-run's JSON line and exit code to the request's result
// (product-contract §1.9, the table's last column).
func classifyArchive(stdout string, exit int, firstErrorLine string) (string, string, string) {
	var out struct {
		Outcome      string  `json:"outcome"`
		Code         *string `json:"code"`
		Audit        *string `json:"audit"`
		LockReleased *bool   `json:"lock_released"`
		EventID      *string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &out); err != nil || out.Outcome == "" || out.LockReleased == nil {
		return rejected("CHILD_RESULT_INVALID", "archive-run printed no result JSON (exit %d)", exit)
	}
	ev, code := deref(out.EventID), deref(out.Code)
	switch {
	case out.Outcome == "ARCHIVED" && deref(out.Audit) == "RECORDED" && (*out.LockReleased && exit == 0 || defect.CloseLockUnreleasedSettledArchived): // planted defect: a CLOSE whose lock stayed held settles as a plain RUN_ARCHIVED
		return stateDone, "RUN_ARCHIVED", "event_id=" + ev
	case out.Outcome == "ARCHIVED" && deref(out.Audit) == "PENDING":
		m := fmt.Sprintf("code=%s event_id=%s", code, ev)
		if !*out.LockReleased {
			m += " lock_release_failed=true"
		}
		return stateDone, "RUN_ARCHIVED_AUDIT_PENDING", m
	case out.Outcome == "ARCHIVED" && !*out.LockReleased:
		return stateDone, "RUN_ARCHIVED_LOCK_UNRELEASED", "event_id=" + ev
	case out.Outcome == "ALREADY_ARCHIVED" && *out.LockReleased:
		return stateDone, "RUN_ALREADY_ARCHIVED", "event_id=" + ev
	case out.Outcome == "ALREADY_ARCHIVED":
		return stateDone, "RUN_ARCHIVED_LOCK_UNRELEASED", "already_archived=true event_id=" + ev
	case out.Outcome == "UNCONFIRMED":
		return rejected("ARCHIVE_UNCONFIRMED", "event_id=%s", ev)
	case out.Outcome == "REJECTED" && code != "-":
		return rejected(code, "archive-run rejected the CLOSE: %s", firstErrorLine)
	}
	return rejected("CHILD_RESULT_INVALID", "archive-run outcome %s (exit %d) is not one the poller knows", out.Outcome, exit)
}

// start checks a START request and runs `run-network <definition> [--business-key k]
// [--scheduled-for ts] --json` — never with --resume.
func (p *poller) start(ctx context.Context, req opRequest, by string) (string, string, string) {
	if strings.TrimSpace(req.str("run_id")) != "" {
		return rejected("RUN_ID_NOT_ALLOWED", "START creates a Run; run_id must be empty")
	}
	netID := req.str("network_id")
	e := p.pc.entry(netID)
	if e == nil {
		return rejected("NETWORK_NOT_ALLOWED", "network %s may not be started from the request app (detail=NOT_IN_ALLOWLIST)", netID)
	}
	if !e.AppStart && !defect.StartIgnoresAppStart {
		return rejected("NETWORK_NOT_ALLOWED", "network %s may not be started from the request app (detail=APP_START_DISABLED)", netID)
	}
	n, err := loadAllowedDefinition(*e) // re-read immediately before spawning
	if err != nil {
		return rejected(codeNetworkDefinitionInvalid, "%s", err.Error())
	}
	for _, nd := range n.Nodes {
		if !nd.Idempotent {
			return rejected("NETWORK_NOT_IDEMPOTENT", "node %s of network %s is not idempotent; START needs every node idempotent", nd.ID, netID)
		}
	}
	key, sched := req.str("business_key"), req.str("scheduled_for")
	if sched != "" {
		if _, err := ParseScheduledFor(sched); err != nil {
			return rejected("INVALID_TIMESTAMP_FORMAT", "scheduled_for %q is not an ISO-8601 date-time with an offset", sched)
		}
	}
	switch n.Policy.Type {
	case "explicit":
		if key == "" || sched != "" {
			return rejected("KEY_POLICY_MISMATCH", "network %s has an explicit business key policy: business_key is required and scheduled_for is not allowed", netID)
		}
	case "scheduled_period":
		switch {
		case key == "" && sched == "":
			return rejected("KEY_POLICY_MISMATCH", "network %s derives its business key from scheduled_for; give scheduled_for (and a correction business_key if needed)", netID)
		case sched == "":
			return rejected("AS_OF_UNDEFINED", "network %s needs scheduled_for as the Run's as_of; a business_key alone leaves it undefined", netID)
		}
	}
	args := []string{"run-network", e.DefinitionPath}
	if key != "" {
		args = append(args, "--business-key", key)
	}
	if sched != "" {
		args = append(args, "--scheduled-for", sched)
	}
	if defect.StartResumesUnfinished {
		args = append(args, "--resume") // planted defect: START continues an unfinished Run of its key
	}
	started := netID + "\x00" + key + "\x00" + sched
	if a, ok := p.coalescedStart(started); ok {
		return a.state, a.code, a.msg
	}
	state, code, msg := classifyRun(p.runChild(ctx, []string{"KSQL_FLOWNET_REQUESTED_BY=" + by}, append(args, "--json")...), true)
	p.rememberStart(started, startAnswer{state, code, msg})
	return state, code, msg
}

// classifyRun maps a run-network child (RERUN and START) to the request outcome (§1.10).
// DONE means the request was processed, not that the Run succeeded.
func classifyRun(res childResult, start bool) (string, string, string) {
	switch {
	case res.spawnErr != nil:
		return rejected("CHILD_SPAWN_FAILED", "run-network could not be started: %v", res.spawnErr)
	case res.execErr != nil:
		return rejected("CHILD_EXECUTION_FAILED", "run-network ended abnormally: %v", res.execErr)
	}
	var out runOutput // run-network's own --json line
	if err := json.Unmarshal([]byte(lastLine(res.stdout)), &out); err != nil || out.InvocationResultCode == "" {
		return rejected("CHILD_RESULT_INVALID", "run-network printed no result JSON (exit %d)", res.exit)
	}
	switch out.Outcome {
	case "NEW", "RESUME":
		if out.InvocationID == nil {
			break
		}
		msg := fmt.Sprintf("aggregate=%s; invocation_id=%s", deref(out.AggregateStatus), *out.InvocationID)
		if len(out.RetryBrakeNodeIDs) > 0 {
			return stateDone, "RETRY_BRAKE", fmt.Sprintf("aggregate=%s; invocation_id=%s; retry_brake_node_ids=%s",
				deref(out.AggregateStatus), *out.InvocationID, strings.Join(out.RetryBrakeNodeIDs, ","))
		}
		return stateDone, out.InvocationResultCode, msg
	case "NOOP":
		code := out.InvocationResultCode
		if start {
			code = CodeNoopAlreadySuccess
		}
		return stateDone, code, fmt.Sprintf("run_id=%s; the Run is already SUCCESS; nothing was executed", deref(out.RunID))
	case "REJECTED":
		code := out.InvocationResultCode
		blocked := append([]string(nil), out.BlockedRunIDs...)
		sort.Strings(blocked)
		if start {
			switch code {
			case "RUN_ALREADY_EXISTS":
				return rejected(code, "an unfinished Run exists for this business key (blocked_run_ids=%s); START never continues a Run: request a RERUN of it instead", strings.Join(blocked, ","))
			case "MAX_ACTIVE_RUNS":
				return rejected(code, "the network already has its maximum of active Runs (blocked_run_ids=%s); finish or close them first", strings.Join(blocked, ","))
			case "LOCK_CONFLICT":
				return rejected(code, "another invocation holds the network lock; nothing was started, request the START again later")
			}
		}
		return rejected(code, "run-network rejected the request: %s", res.firstErrorLine())
	}
	return rejected("CHILD_RESULT_INVALID", "run-network outcome %q (exit %d) is not one the poller knows", out.Outcome, res.exit)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
