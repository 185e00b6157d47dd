package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ksqlFlow runs kSQL-Flow as `<bin> <bin args…> <subcommand …>` without a shell (§7).
type ksqlFlow struct {
	bin             string
	args            []string
	config, workdir string
	profile         string
	environ         []string
	dir             string
	grace           time.Duration
	// batchTimeoutSec comes from describe-profile (limits.batchTimeoutSec); 0 = no timeout.
	batchTimeoutSec float64
}

// parseBinArgs reads KSQL_FLOW_BIN_ARGS: a JSON string array when it starts with '[',
// otherwise whitespace-separated.
func parseBinArgs(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("KSQL_FLOW_BIN_ARGS is not a JSON string array: %w", err)
		}
		return out, nil
	}
	return strings.Fields(s), nil
}

func (k *ksqlFlow) command(ctx context.Context, sub ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.bin, append(append([]string(nil), k.args...), sub...)...)
	cmd.Env, cmd.Dir = k.environ, k.dir
	return cmd
}

// machineJSON runs a --json subcommand and decodes its one JSON object.
func (k *ksqlFlow) machineJSON(ctx context.Context, out any, sub ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := k.command(ctx, sub...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &codedError{Code: "KSQL_FLOW_PROCESS_FAILED", Msg: fmt.Sprintf("ksql-flow %s failed: %v: %s", sub[0], err, tail(stderr.String(), 500)), Err: err}
	}
	raw := bytes.TrimSpace(stdout.Bytes())
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, &codedError{Code: "KSQL_FLOW_INVALID_JSON", Msg: fmt.Sprintf("ksql-flow %s printed no JSON object: %v", sub[0], err), Err: err}
	}
	return raw, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// Capabilities is the part of `capabilities --json` FlowNet checks.
type Capabilities struct {
	Kind               string          `json:"kind"`
	KsqlFlowVersion    string          `json:"ksqlFlowVersion"`
	EngineVersion      string          `json:"engineVersion"`
	ExecutionContracts []string        `json:"executionContracts"`
	Features           map[string]any  `json:"features"`
	Raw                json.RawMessage `json:"-"`
}

// checkCapabilities enforces §1.3.1 step 2; it runs before the Network lock.
func (k *ksqlFlow) checkCapabilities(ctx context.Context, n *Network) (*Capabilities, error) {
	var c Capabilities
	if _, err := k.machineJSON(ctx, &c, "capabilities", "--json"); err != nil {
		return nil, err
	}
	found := false
	for _, x := range c.ExecutionContracts {
		found = found || x == executionContract
	}
	if !found {
		return nil, coded("CAPABILITY_CONTRACT_MISSING", "kSQL-Flow does not offer the %s contract", executionContract)
	}
	need := []string{"resultJson", "correlationIds", "describeProfile", "inspectJob", "durableExecutionStarted"}
	for _, nd := range n.Nodes {
		if len(nd.Inputs) > 0 && !defect.CapabilityCheckIgnoresInputs {
			need = append(need, "importCsv")
			break
		}
	}
	for _, nd := range n.Nodes {
		if len(nd.Outputs) > 0 {
			need = append(need, "resultCsv")
			break
		}
	}
	for _, f := range need {
		if v, _ := c.Features[f].(bool); !v {
			return nil, coded("CAPABILITY_FEATURE_MISSING", "kSQL-Flow capability feature %s is not true", f)
		}
	}
	return &c, nil
}

// profileDescription is describe-profile's output, kept whole for the snapshot hash.
type profileDescription struct {
	Raw     map[string]any
	SHA256  string
	Limits  struct{ BatchTimeoutSec float64 }
	Summary map[string]any // the resolved_profile_snapshot JSON (§4.1)
}

func (k *ksqlFlow) describeProfile(ctx context.Context) (*profileDescription, error) {
	var raw map[string]any
	if _, err := k.machineJSON(ctx, &raw, "describe-profile", "--profile", k.profile, "--config", k.config, "--json"); err != nil {
		return nil, err
	}
	if raw["kind"] != "PROFILE_DESCRIPTION" {
		return nil, coded("KSQL_FLOW_OUTPUT_INVALID", "describe-profile returned kind %v", raw["kind"])
	}
	if tz, _ := raw["timezone"].(string); tz == "" {
		// A well-formed description FlowNet cannot use is an ensure-run preflight problem
		// (§1.3.1 PROFILE_DESCRIPTION_INVALID), not a broken kSQL-Flow output.
		return nil, coded("PROFILE_DESCRIPTION_INVALID", "kSQL-Flow profile %s has no timezone; FlowNet requires one", k.profile)
	}
	canon, err := canonicalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("encode profile description: %w", err)
	}
	d := &profileDescription{Raw: raw, SHA256: sha256Hex(canon)}
	limits, _ := raw["limits"].(map[string]any)
	if v, ok := limits["batchTimeoutSec"].(float64); ok {
		d.Limits.BatchTimeoutSec = v
		k.batchTimeoutSec = v
	}
	d.Summary = map[string]any{
		"profile": raw["profile"], "base_url": raw["baseUrl"], "guest_space_id": raw["guestSpaceId"],
		"timezone": raw["timezone"], "apps": raw["apps"],
		"limits": map[string]any{"max_api_calls": limits["maxApiCalls"], "max_read_rows": limits["maxReadRows"], "batch_timeout_sec": limits["batchTimeoutSec"]},
	}
	return d, nil
}

// JobInspection is inspect-job's output.
type JobInspection struct {
	Kind                     string       `json:"kind"`
	JobID                    string       `json:"jobId"`
	Dialect                  any          `json:"dialect"`
	Diagnostics              []Diagnostic `json:"diagnostics"`
	NondeterministicElements []Diagnostic `json:"nondeterministicElements"`
}

// Diagnostic is one inspect-job finding.
type Diagnostic struct {
	Code, Severity, Message string
}

// inspectJobs checks every node's SQL: job id must match, and idempotent nodes must not use
// nondeterministic elements (KSQL1306).
func (k *ksqlFlow) inspectJobs(ctx context.Context, n *Network, sqlPath func(Node) string) error {
	for _, nd := range n.Nodes {
		var ins JobInspection
		if _, err := k.machineJSON(ctx, &ins, "inspect-job", "-f", sqlPath(nd), "--profile", k.profile, "--config", k.config, "--json"); err != nil {
			return err
		}
		if ins.JobID != nd.JobID {
			return coded("JOB_ID_MISMATCH", "node %s: SQL %s declares job %q, the network says %q", nd.ID, nd.SQL, ins.JobID, nd.JobID)
		}
		for _, d := range ins.NondeterministicElements {
			if d.Code == "KSQL1306" && nd.Idempotent {
				return coded("NONDETERMINISTIC_IDEMPOTENT_JOB", "node %s is idempotent but its SQL is nondeterministic: %s", nd.ID, d.Message)
			}
		}
	}
	return nil
}

// runSpec is one `ksql-flow run` in orchestrator mode.
type runSpec struct {
	SQLPath, AsOf, RunID, AttemptID, JobID string
	Timeout                                time.Duration // 0 = none
	Extra                                  []string      // CSV flags (--import-csv …), io.go
}

// runResult is what came back from one run.
type runResult struct {
	LaunchErr  error
	Exit       int
	Signaled   bool
	ForcedKill bool
	ResultRaw  []byte // nil when the result file is missing
	Stderr     string
}

var unsafeIDChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// resultPath is <KSQL_FLOW_WORKDIR>/metadata/<sanitized attempt id>.json.
func (k *ksqlFlow) resultPath(attemptID string) string {
	return filepath.Join(k.workdir, "metadata", unsafeIDChars.ReplaceAllString(attemptID, "_")+".json")
}

// run executes one attempt. The child is never given a shell. On the timeout it gets a
// graceful signal, then the grace period, then a kill (FORCED_TERMINATION).
func (k *ksqlFlow) run(ctx context.Context, s runSpec) runResult {
	resPath := k.resultPath(s.AttemptID)
	if err := os.MkdirAll(filepath.Dir(resPath), 0o755); err != nil {
		return runResult{LaunchErr: fmt.Errorf("create result dir: %w", err)}
	}
	_ = os.Remove(resPath) // kSQL-Flow refuses an existing --result-json path
	cmd := exec.Command(k.bin, append(append(append([]string(nil), k.args...),
		"run", "-f", s.SQLPath, "--profile", k.profile, "--config", k.config,
		"--as-of", s.AsOf, "--result-json", resPath,
		"--correlation-id", s.RunID, "--attempt-id", s.AttemptID, "--expected-job-id", s.JobID), s.Extra...)...)
	cmd.Env, cmd.Dir = k.environ, k.dir
	// The child writes its output to a file, not a pipe: if FlowNet dies, an orphaned
	// kSQL-Flow must be able to finish (a write to a broken pipe would kill it).
	logPath := filepath.Join(k.workdir, "logs", unsafeIDChars.ReplaceAllString(s.AttemptID, "_")+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return runResult{LaunchErr: fmt.Errorf("create log dir: %w", err)}
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return runResult{LaunchErr: fmt.Errorf("create child log: %w", err)}
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return runResult{LaunchErr: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeout <-chan time.Time
	if s.Timeout > 0 {
		timeout = time.After(s.Timeout)
	}
	forced := false
	var werr error
	select {
	case werr = <-done:
	case <-timeout:
		terminate(cmd.Process)
		select {
		case werr = <-done:
		case <-time.After(k.grace):
			_ = cmd.Process.Kill()
			forced = true
			werr = <-done
		}
	case <-ctx.Done():
		terminate(cmd.Process)
		werr = <-done
	}
	r := runResult{Exit: cmd.ProcessState.ExitCode(), ForcedKill: forced}
	if b, err := os.ReadFile(logPath); err == nil {
		r.Stderr = tail(string(b), 8192)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() == -1 {
		r.Signaled = true
	}
	if raw, err := os.ReadFile(resPath); err == nil {
		r.ResultRaw = raw
	}
	return r
}

// terminate asks the child to stop at a safe boundary (SIGTERM; Windows has no such
// signal for arbitrary processes, so it is killed there).
func terminate(p *os.Process) {
	if runtime.GOOS == "windows" {
		_ = p.Kill()
		return
	}
	_ = p.Signal(syscall.SIGTERM)
}
