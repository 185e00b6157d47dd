package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// The black-box contract probe: the flowsandbox binary is started as `flowsandbox flownet
// <command> …` — a child process, its environment, its exit code, stdout and stderr, nothing
// of this package's code — against a fresh kintone emulator, and answers every item of
// product-contract.md §1 that needs no long setup (no kill, no lease wait, no fault, no
// second process). A row's seed writes at most a few records through the emulator's API, as
// an operator's tenant would hold them. One row per contract item; the count is logged
// ("contract probe: N/N") and every row names its section.
//
// What it cannot reach black-box, and why, is the list notProbed below.

type probeRow struct {
	section, item string
	seed          func(p *probeEnv)
	args          func(p *probeEnv) []string
	env           []string // appended NAME=value; "NAME=" unsets it
	exit          int
	stdout        string         // regexp stdout must match ("" = must be empty)
	jsonOut       map[string]any // instead of stdout: exactly one JSON line holding these fields
	stderr        string         // regexp stderr must match ("" = must be empty)
	after         func(t *testing.T, p *probeEnv)
}

// probeEnv is one row's world: a fresh emulator and the files a command line names.
type probeEnv struct {
	*sandbox
	dir    string
	before map[string]string // state and audit $revisions just before the probed command
}

func (p *probeEnv) file(name, body string) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	require.NoError(p.t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func (p *probeEnv) reason() string { return p.file("reason.txt", "contract probe") }

func (p *probeEnv) success() string { return p.network("network-success.yaml") }

// seedRun writes a NETWORK_RUN of the success network with status and lifecycle.
func (p *probeEnv) seedRun(runID, networkID, status, lifecycle string) {
	p.t.Helper()
	_, _, err := p.admin.AddRecord(context.Background(), p.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "R1:" + runID, "record_type": "NETWORK_RUN", "run_id": runID, "network_id": networkID, "business_key": "probe",
		"status": status, "lifecycle_status": lifecycle, "resume_allowed": "true",
		"resolved_profile_snapshot": `{"profile":"` + testProfile + `"}`}))
	require.NoError(p.t, err)
}

func (p *probeEnv) seedHold(runID string) {
	p.t.Helper()
	_, _, err := p.admin.AddRecord(context.Background(), p.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "CANCEL:" + runID, "record_type": "CANCEL_REQUEST", "run_id": runID,
		"status_reason": `{"state":"REQUESTED","requested_by":"probe","reason":"probe","requested_at":"2026-11-29T10:00:00.000Z",` +
			`"accepted_at":null,"released_at":null,"release_reason":null,"release_requested_by":null}`}))
	require.NoError(p.t, err)
}

// flownetBin runs the binary as a child process.
func (p *probeEnv) flownetBin(env []string, args ...string) cmdResult {
	p.t.Helper()
	cmd := exec.Command(flowsandboxBin(p.t), append([]string{"flownet"}, args...)...)
	cmd.Env = append(append([]string{}, p.environ...), env...)
	cmd.Dir = p.childDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(p.t, ok, "start flowsandbox: %v", err)
		code = ee.ExitCode()
	}
	return cmdResult{code, out.String(), errb.String()}
}

func probeArgs(a ...string) func(*probeEnv) []string { return func(*probeEnv) []string { return a } }

const (
	uuidRe     = `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`
	probeNet   = "m5_success"
	probeRunID = "netrun_probe"
)

var commandNames = []string{"validate", "plan", "run-network", "poll-requests", "resolve-node", "record-job-unlock",
	"force-unlock-network", "cancel-run", "archive-run", "status"}

func contractRows() []probeRow {
	rows := []probeRow{
		{section: "§1", item: "--help prints usage naming every command, exit 0", args: probeArgs("--help"),
			stdout: `(?s)^Usage: ksql-flownet .*$`, after: func(t *testing.T, p *probeEnv) {
				usage := p.flownetBin(nil, "--help").stdout
				for _, name := range commandNames {
					assert.Regexp(t, `(?m)^  `+name+` `, usage, "the usage lists %s", name)
				}
			}},
		{section: "§1", item: "-h prints usage, exit 0", args: probeArgs("-h"), stdout: `(?s)^Usage: ksql-flownet .*$`},
		{section: "§1", item: "--version prints the version, exit 0", args: probeArgs("--version"), stdout: `^\S+\n$`},
		{section: "§1", item: "-V prints the version, exit 0", args: probeArgs("-V"), stdout: `^\S+\n$`},
		{section: "§1", item: "unknown command: Error: unknown command '<x>'. + hint, exit 1", args: probeArgs("frobnicate"), exit: 1,
			stderr: `^Error: unknown command 'frobnicate'\.\n.+`},
		{section: "§1", item: "a repeated value option is an error", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"cancel-run", "--run-id", "a", "--run-id", "b", "--reason-file", p.reason()}
			},
			stderr: `^Invalid cancel-run arguments:\n- --run-id was specified more than once\n`},
		{section: "§1", item: "an option value may not start with --", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"cancel-run", "--run-id", "--release", "--reason-file", p.reason()}
			},
			stderr: `^Invalid cancel-run arguments:\n- --run-id requires a value\n`},
	}
	// Every command of the list exists and refuses a bare call with the argument-error block.
	bare := map[string][]string{"poll-requests": {"poll-requests", "--now"}}
	for _, name := range commandNames {
		args := []string{name}
		if b, ok := bare[name]; ok {
			args = b
		}
		rows = append(rows, probeRow{section: "§1 command list", item: name + " exists; a bad call is 'Invalid " + name + " arguments:' + '- ' lines, exit 1",
			args: probeArgs(args...), exit: 1, stderr: `^Invalid ` + name + ` arguments:\n(- .+\n)+$`})
	}
	rows = append(rows,
		probeRow{section: "§1.1", item: "validate success: Valid network definition: <path>, exit 0",
			args: func(p *probeEnv) []string { return []string{"validate", p.success()} }, stdout: `^Valid network definition: .+network-success\.yaml\n$`},
		probeRow{section: "§1.1", item: "validate lists every error: 'Network validation failed with N error(s):' + '- [<CODE>] <path>: <message>'", exit: 1,
			args: func(p *probeEnv) []string {
				yaml := strings.Replace(readFixture(p, "network-success.yaml"), "max_active_runs: 1", "max_active_runs: 1\nsurprise: true", 1)
				yaml = strings.Replace(yaml, "heartbeat_interval_sec: 15", "heartbeat_interval_sec: 60", 1)
				return []string{"validate", p.file("bad.yaml", yaml)}
			},
			stderr: `^Network validation failed with [2-9] error\(s\):\n(- \[[A-Z_]+\] \S+: .+\n){2,}$`},
		probeRow{section: "§1.1", item: "validate: a node's SQL must be a readable file (SQL_FILE_UNREADABLE)", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"validate", p.file("nosql.yaml", strings.Replace(readFixture(p, "network-success.yaml"), "success-n1-extract.sql", "missing.sql", 1))}
			},
			stderr: `- \[SQL_FILE_UNREADABLE\] `},
		probeRow{section: "§1.2", item: "plan prints Business key: and the numbered plan lines, exit 0",
			args:   func(p *probeEnv) []string { return []string{"plan", p.success(), "--business-key", "probe"} },
			stdout: `^Business key: probe\nExecution plan:\n1\. n1_extract \| job_id=m5_shared_read \| idempotent=true \| depends_on=-\n2\. n2_aggregate \| job_id=\S+ \| idempotent=true \| depends_on=n1_extract\n3\. .+\n$`},
		probeRow{section: "§1.2", item: "plan never generates the manual key: explicit policy without a key is BUSINESS_KEY_REQUIRED", exit: 1,
			args: func(p *probeEnv) []string { return []string{"plan", p.success()} }, stderr: `BUSINESS_KEY_REQUIRED`},
		probeRow{section: "§1.2", item: "plan: scheduled_period without --scheduled-for is SCHEDULED_FOR_REQUIRED", exit: 1,
			args: func(p *probeEnv) []string { return []string{"plan", p.network("network-p211-scheduled.yaml")} }, stderr: `SCHEDULED_FOR_REQUIRED`},
		probeRow{section: "§1.3", item: "--resume-run cannot be combined with --resume", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--resume"}
			},
			stderr: `^Invalid run-network arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.3", item: "--rerun-from requires --resume or --resume-run", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--business-key", "k", "--rerun-from", "n1_extract"}
			},
			stderr: `^Invalid run-network arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.3", item: "--json: an argument error is one JSON line, outcome REJECTED / INVALID_ARGUMENTS", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--resume", "--json"}
			},
			jsonOut: map[string]any{"outcome": "REJECTED", "invocation_result_code": "INVALID_ARGUMENTS", "invocation_id": nil}, stderr: `.*`},
		probeRow{section: "§1.3", item: "NEW text: 'NEW: Run <run_id> finished with aggregate SUCCESS (OK).', exit 0",
			args:   func(p *probeEnv) []string { return []string{"run-network", p.success(), "--business-key", "probe"} },
			stdout: `^NEW: Run netrun_` + uuidRe + ` finished with aggregate SUCCESS \(OK\)\.\n$`},
		probeRow{section: "§1.3", item: "NOOP --json: outcome NOOP, NOOP_ALREADY_SUCCESS, aggregate SUCCESS, invocation_id null, exit 0",
			seed: func(p *probeEnv) {
				r := p.flownetBin(nil, "run-network", p.success(), "--business-key", "probe")
				require.Equal(p.t, 0, r.code, r.stderr)
			},
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--business-key", "probe", "--json"}
			},
			jsonOut: map[string]any{"outcome": "NOOP", "invocation_result_code": "NOOP_ALREADY_SUCCESS", "aggregate_status": "SUCCESS", "invocation_id": nil}},
		probeRow{section: "§1.3", item: "NOOP text: 'NO-OP: Run <run_id> is already SUCCESS; nothing was executed.', exit 0",
			seed: func(p *probeEnv) {
				r := p.flownetBin(nil, "run-network", p.success(), "--business-key", "probe")
				require.Equal(p.t, 0, r.code, r.stderr)
			},
			args:   func(p *probeEnv) []string { return []string{"run-network", p.success(), "--business-key", "probe"} },
			stdout: `^NO-OP: Run netrun_` + uuidRe + ` is already SUCCESS; nothing was executed\.\n$`},
		probeRow{section: "§1.3.1", item: "RUN_NOT_FOUND: --resume-run of an unknown id (run_id echoes it)", exit: 1,
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--json"}
			},
			jsonOut: runRejected("RUN_NOT_FOUND", map[string]any{"run_id": probeRunID}), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "RUN_ID_MISMATCH: the selected Run belongs to another network", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, "other_network", StatusFailed, "ACTIVE") },
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--json"}
			},
			jsonOut: runRejected("RUN_ID_MISMATCH", nil), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "RUN_NOT_RESUMABLE: the selected Run is ARCHIVED", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ARCHIVED") },
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--json"}
			},
			jsonOut: runRejected("RUN_NOT_RESUMABLE", nil), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "RUN_ON_HOLD: the selected Run has a REQUESTED hold", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE"); p.seedHold(probeRunID) },
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--resume-run", probeRunID, "--json"}
			},
			jsonOut: runRejected("RUN_ON_HOLD", nil), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "RUN_ALREADY_EXISTS: an unfinished Run of the key without --resume (blocked_run_ids)", exit: 1,
			seed: func(p *probeEnv) { p.seedR1Run(probeRunID, "probe", StatusFailed) },
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--business-key", "probe", "--json"}
			},
			jsonOut: runRejected("RUN_ALREADY_EXISTS", map[string]any{"blocked_run_ids": []any{probeRunID}}), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "MAX_ACTIVE_RUNS: another key's active Run fills max_active_runs 1", exit: 1,
			seed: func(p *probeEnv) { p.seedR1Run(probeRunID, "other-key", StatusFailed) },
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--business-key", "probe", "--json"}
			},
			jsonOut: runRejected("MAX_ACTIVE_RUNS", nil), stderr: `.*`},
		probeRow{section: "§1.3.1", item: "LOCK_CONFLICT: a RUNNING Network lock exists (never taken over)", exit: 1,
			seed: func(p *probeEnv) {
				p.putLock(probeNet, "invoke_other", "local-pid://elsewhere/1", time.Now().Add(time.Hour))
			},
			args: func(p *probeEnv) []string {
				return []string{"run-network", p.success(), "--business-key", "probe", "--json"}
			},
			jsonOut: runRejected("LOCK_CONFLICT", nil), stderr: `.*`},
		probeRow{section: "§1.4", item: "status: --run-id and --business-key are mutually exclusive", exit: 1,
			args:   probeArgs("status", probeNet, "--profile", testProfile, "--run-id", probeRunID, "--business-key", "k"),
			stderr: `^Invalid status arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.4", item: "status: --profile is required", exit: 1, args: probeArgs("status", probeNet),
			stderr: `^Invalid status arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.4", item: "status: not found is 'Error [RECORD_NOT_FOUND]: …', exit 1 (the poller's prefix)", exit: 1,
			args: probeArgs("status", probeNet, "--profile", testProfile, "--run-id", probeRunID, "--json"), stderr: `^Error \[RECORD_NOT_FOUND\]: `},
		probeRow{section: "§1.4", item: "status --json: pretty JSON (2-space indent), lock null and runs [] on a fresh network",
			args:   probeArgs("status", probeNet, "--profile", testProfile, "--json"),
			stdout: `(?s)^\{\n  "network_id": "m5_success",\n  "profile": "sandbox",\n  "lock": null,\n  "runs": \[\]\n\}\n$`},
		probeRow{section: "§1.5", item: "force-unlock-network: LOCK_NOT_FOUND when the network holds no lock; no write", exit: 1,
			args: forceUnlockArgs(probeNet, "invoke_x"), stderr: `^Error \[LOCK_NOT_FOUND\]: `, after: noWrite},
		probeRow{section: "§1.5", item: "force-unlock-network: OWNER_MISMATCH; no write", exit: 1,
			seed: func(p *probeEnv) {
				p.putLock(probeNet, "invoke_owner", "local-pid://elsewhere/1", time.Now().Add(-time.Hour))
			},
			args: forceUnlockArgs(probeNet, "invoke_x"), stderr: `^Error \[OWNER_MISMATCH\]: `},
		probeRow{section: "§1.5", item: "force-unlock-network: LEASE_STILL_ACTIVE within lease + 60 s", exit: 1,
			seed: func(p *probeEnv) {
				// A lease that runs out two minutes from now: kintone keeps DATETIMEs to the minute,
				// so a lease "30 s ago" could read as up to 89 s ago and be past lease + 60 s
				// depending on where in the minute the row runs.
				p.putLock(probeNet, "invoke_owner", "local-pid://elsewhere/1", time.Now().Add(2*time.Minute))
			},
			args: forceUnlockArgs(probeNet, "invoke_owner"), stderr: `^Error \[LEASE_STILL_ACTIVE\]: `},
		probeRow{section: "§1.5", item: "force-unlock-network: STOP_NOT_CONFIRMED (local_pid of another host)", exit: 1,
			seed: func(p *probeEnv) {
				p.putLock(probeNet, "invoke_owner", "local-pid://elsewhere/1", time.Now().Add(-time.Hour))
			},
			args: func(p *probeEnv) []string {
				return replaceOpt(forceUnlockArgs(probeNet, "invoke_owner")(p), "--stop-method", stopLocalPID)
			}, stderr: `^Error \[STOP_NOT_CONFIRMED\]: `},
		probeRow{section: "§1.5", item: "force-unlock-network: INVALID_ARGUMENT (a network id with ':')", exit: 1,
			args: forceUnlockArgs("bad:net", "invoke_x"), stderr: `^Error \[INVALID_ARGUMENT\]: `},
		probeRow{section: "§1.5", item: "force-unlock-network: KSQL_FLOWNET_SERVICE_PRINCIPAL is required", exit: 1,
			env: []string{"KSQL_FLOWNET_SERVICE_PRINCIPAL="}, args: forceUnlockArgs(probeNet, "invoke_x"), stderr: `^Error \[\S+\]: .*KSQL_FLOWNET_SERVICE_PRINCIPAL`},
		probeRow{section: "§1.5", item: "force-unlock-network: 'RELEASED: <lock_key> (previous owner <id>, post revision <n>).' + hint, one NETWORK_LOCK_FORCE_RELEASED audit",
			seed: func(p *probeEnv) {
				p.putLock(probeNet, "invoke_owner", "local-pid://elsewhere/1", time.Now().Add(-time.Hour))
			},
			args:   forceUnlockArgs(probeNet, "invoke_owner"),
			stdout: `^RELEASED: N1:\S{43} \(previous owner invoke_owner, post revision \d+\)\.\n.+\n$`,
			after:  oneOperationAudit("NETWORK_LOCK_FORCE_RELEASED")},
		probeRow{section: "§1.6", item: "resolve-node: --to must be SUCCESS|FAILED|CANCELLED", exit: 1,
			args: resolveArgs("DONE"), stderr: `^Invalid resolve-node arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.6", item: "resolve-node: --manual-completion xor --compensation", exit: 1,
			args: resolveArgs("FAILED", "--manual-completion", "--compensation"), stderr: `^Invalid resolve-node arguments:\n(- .+\n)+$`},
		probeRow{section: "§1.6", item: "resolve-node: SUCCESS requires --manual-completion (MANUAL_COMPLETION_REQUIRED)", exit: 1,
			args: resolveArgs("SUCCESS"), stderr: `^Error \[MANUAL_COMPLETION_REQUIRED\]: `},
		probeRow{section: "§1.6", item: "resolve-node: manual completion only to SUCCESS (MANUAL_COMPLETION_REQUIRES_SUCCESS)", exit: 1,
			args: resolveArgs("FAILED", "--manual-completion"), stderr: `^Error \[MANUAL_COMPLETION_REQUIRES_SUCCESS\]: `},
		probeRow{section: "§1.6", item: "resolve-node: AUDIT_INPUT_REQUIRED (empty --evidence-ref)", exit: 1,
			args: func(p *probeEnv) []string { return replaceOpt(resolveArgs("FAILED")(p), "--evidence-ref", " ") }, stderr: `^Error \[AUDIT_INPUT_REQUIRED\]: `},
		probeRow{section: "§1.6", item: "resolve-node: NODE_NOT_RESOLVABLE (a SUCCESS node); no write", exit: 1,
			seed: func(p *probeEnv) {
				p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE")
				p.seedState(probeRunID, "n1", "j1", StatusSuccess)
			},
			args: resolveArgs("FAILED"), stderr: `^Error \[NODE_NOT_RESOLVABLE\]: `, after: noWrite},
		probeRow{section: "§1.7", item: "record-job-unlock: AUDIT_INPUT_REQUIRED (empty --stop-confirmed-by)", exit: 1,
			args: func(p *probeEnv) []string {
				return replaceOpt(jobUnlockArgs(p, recoveryOf("n1_job")), "--stop-confirmed-by", "")
			},
			stderr: `^Error \[AUDIT_INPUT_REQUIRED\]: `},
		probeRow{section: "§1.7", item: "record-job-unlock: INVALID_LOCK_RECOVERY_RESULT (NOT_FOUND with a holder)", exit: 1,
			args: func(p *probeEnv) []string {
				return jobUnlockArgs(p, `{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"jobKey":"sandbox:n1_job","outcome":"NOT_FOUND","recordId":"3","before":{"batchId":"b"}}`)
			}, stderr: `^Error \[INVALID_LOCK_RECOVERY_RESULT\]: `},
		probeRow{section: "§1.7", item: "record-job-unlock: NODE_STATE_NOT_UNIQUE; no write", exit: 1,
			seed: func(p *probeEnv) {
				p.seedRun(probeRunID, probeNet, StatusUnknown, "ACTIVE")
				p.seedState(probeRunID, "n1", "n1_job", StatusUnknown)
				p.putNodeState(probeRunID, "n1", "n1_job", "STATE:second", StatusUnknown)
			},
			args: func(p *probeEnv) []string { return jobUnlockArgs(p, recoveryOf("n1_job")) }, stderr: `^Error \[NODE_STATE_NOT_UNIQUE\]: `, after: noWrite},
		probeRow{section: "§1.7", item: "record-job-unlock: JOB_KEY_MISMATCH for another node's key; no write", exit: 1,
			seed: func(p *probeEnv) {
				p.seedRun(probeRunID, probeNet, StatusUnknown, "ACTIVE")
				p.seedState(probeRunID, "n1", "n1_job", StatusUnknown)
				p.seedState(probeRunID, "n2", "n2_job", StatusSuccess)
			},
			args: func(p *probeEnv) []string { return jobUnlockArgs(p, recoveryOf("n2_job")) }, stderr: `^Error \[JOB_KEY_MISMATCH\]: `, after: noWrite},
		probeRow{section: "§1.7", item: "record-job-unlock: 'RECORDED: <outcome> for <jobKey> (<event_id>).', one JOB_LOCK_FORCE_UNLOCK_RECORDED audit",
			seed: func(p *probeEnv) {
				p.seedRun(probeRunID, probeNet, StatusUnknown, "ACTIVE")
				p.seedState(probeRunID, "n1", "n1_job", StatusUnknown)
			},
			args:   func(p *probeEnv) []string { return jobUnlockArgs(p, recoveryOf("n1_job")) },
			stdout: `^RECORDED: RELEASED for sandbox:n1_job \(job_unlock_` + uuidRe + `\)\.\n$`, after: oneOperationAudit("RELEASED")},
		probeRow{section: "§1.8", item: "cancel-run: KSQL_FLOWNET_REQUESTED_BY is required", exit: 1, env: []string{"KSQL_FLOWNET_REQUESTED_BY="},
			args: cancelArgs(), stderr: `^Error \[\S+\]: .*KSQL_FLOWNET_REQUESTED_BY`},
		probeRow{section: "§1.8", item: "cancel-run: unknown run is RECORD_NOT_FOUND", exit: 1, args: cancelArgs(), stderr: `^Error \[RECORD_NOT_FOUND\]: `},
		probeRow{section: "§1.8", item: "cancel-run: STOP of a terminal Run is RUN_ALREADY_TERMINAL; no write", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE") }, args: cancelArgs(),
			stderr: `^Error \[RUN_ALREADY_TERMINAL\]: `, after: noWrite},
		probeRow{section: "§1.8", item: "cancel-run: STOP prints 'REQUESTED: CANCEL:<run_id> (revision <n>).'",
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusRunning, "ACTIVE") }, args: cancelArgs(),
			stdout: `^REQUESTED: CANCEL:` + probeRunID + ` \(revision 1\)\.\n$`},
		probeRow{section: "§1.8", item: "cancel-run --release without a hold is a no-op: 'RELEASED: CANCEL:<run_id> (revision none).'",
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusRunning, "ACTIVE") }, args: cancelArgs("--release"),
			stdout: `^RELEASED: CANCEL:` + probeRunID + ` \(revision none\)\.\n$`, after: noWrite},
		probeRow{section: "§1.9", item: "archive-run: unknown Run is one JSON line REJECTED / RUN_READ_FAILED, lock_released true", exit: 1,
			args: archiveArgs(), jsonOut: archiveRejected("RUN_READ_FAILED"), stderr: `.*`},
		probeRow{section: "§1.9", item: "archive-run: a FAILED Run is ARCHIVED / RECORDED / released, exit 0, one RUN_ARCHIVED audit",
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE") }, args: archiveArgs(),
			jsonOut: map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": true, "run_id": probeRunID}, stderr: `.*`,
			after: func(t *testing.T, p *probeEnv) {
				oneOperationAudit("RUN_ARCHIVED")(t, p)
				assert.Empty(t, p.runningLocks(), "the lock is released")
			}},
		probeRow{section: "§1.9", item: "archive-run: an ARCHIVED Run is ALREADY_ARCHIVED, lock released, exit 0",
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ARCHIVED") }, args: archiveArgs(),
			jsonOut: map[string]any{"outcome": "ALREADY_ARCHIVED", "lock_released": true, "run_id": probeRunID}, stderr: `.*`},
	)
	for _, c := range []struct{ status, code string }{
		{StatusSuccess, "RUN_STATUS_NOT_CLOSABLE"}, {StatusUnknown, "RUN_UNKNOWN_NOT_CLOSABLE"}, {StatusRunning, "RUN_NOT_TERMINAL"}} {
		status := c.status
		rows = append(rows, probeRow{section: "§1.9", item: "archive-run: a " + status + " Run is REJECTED / " + c.code + "; no state or audit write", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, status, "ACTIVE") }, args: archiveArgs(),
			jsonOut: archiveRejected(c.code), stderr: `.*`, after: noRunOrAuditWrite})
	}
	rows = append(rows,
		probeRow{section: "§1.9", item: "archive-run: a held Run is REJECTED / RUN_ON_HOLD", exit: 1,
			seed: func(p *probeEnv) { p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE"); p.seedHold(probeRunID) }, args: archiveArgs(),
			jsonOut: archiveRejected("RUN_ON_HOLD"), stderr: `.*`},
		probeRow{section: "§1.9", item: "archive-run: a held Network lock is REJECTED / LOCK_CONFLICT (never taken over), lock_released true", exit: 1,
			seed: func(p *probeEnv) {
				p.seedRun(probeRunID, probeNet, StatusFailed, "ACTIVE")
				p.putLock(probeNet, "invoke_other", "local-pid://elsewhere/1", time.Now().Add(-time.Hour))
			},
			args: archiveArgs(), jsonOut: archiveRejected("LOCK_CONFLICT"), stderr: `.*`},
		probeRow{section: "§1.10", item: "poll-requests --check: 'poll-requests check: ok networks=<n> request_app=readable', exit 0",
			env: nil, args: probeArgs("poll-requests", "--check"), stdout: `^poll-requests check: ok networks=1 request_app=readable\n$`},
		probeRow{section: "§1.10", item: "poll-requests: the counters line on an empty request app, exit 0",
			args:   probeArgs("poll-requests"),
			stdout: `^poll-requests: requested=0 claimed=0 completed=0 cancelled=0 invalid=0 stale=0 skipped=0\n$`},
	)
	for _, c := range []struct{ code, allowlist string }{
		{"ALLOWLIST_PATH_NOT_ABSOLUTE", "relative"},
		{"ALLOWLIST_UNREADABLE", "missing"},
		{"ALLOWLIST_PARSE_ERROR", "networks: [\n"},
		{"CONFIG_SHAPE_INVALID", "networks: []\n"},
		{"NETWORK_ENTRY_INVALID", "networks:\n  - network_id: m5_success\n    definition_path: {def}\n    colour: blue\n"},
		{"DUPLICATE_NETWORK", "networks:\n  - network_id: m5_success\n    definition_path: {def}\n  - network_id: m5_success\n    definition_path: {def}\n"},
		{"DEFINITION_PATH_NOT_ABSOLUTE", "networks:\n  - network_id: m5_success\n    definition_path: network.yaml\n"},
		{"NETWORK_ID_MISMATCH", "networks:\n  - network_id: m5_other\n    definition_path: {def}\n"},
		{"NETWORK_DEFINITION_INVALID", "networks:\n  - network_id: m5_success\n    definition_path: {bad}\n"},
	} {
		allowlist := c.allowlist
		rows = append(rows, probeRow{section: "§1.10", item: "poll-requests --check: " + c.code, exit: 1,
			args: func(p *probeEnv) []string {
				p.environ = append(p.environ, "KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH="+p.allowlist(allowlist))
				return []string{"poll-requests", "--check"}
			}, stderr: `^Error \[` + c.code + `\]: `})
	}
	rows = append(rows, probeRow{section: "§1.10", item: "poll-requests --check: THRESHOLD_INVALID (stale-after not above heartbeat)", exit: 1,
		env:  []string{"KSQL_FLOWNET_REQUEST_STALE_AFTER_MS=1000", "KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS=1000"},
		args: probeArgs("poll-requests", "--check"), stderr: `^Error \[THRESHOLD_INVALID\]: `})
	return rows
}

// notProbed are the §1 items the probe cannot reach black-box, and why.
var notProbed = []struct{ section, item, why string }{
	{"§1.3.1", "CAPABILITY_CONTRACT_MISSING / CAPABILITY_FEATURE_MISSING", "needs a kSQL-Flow that lies about its capabilities (a fake binary), not the sandbox's"},
	{"§1.3.1", "RERUN_FROM_* / RUN_NOT_RESUMABLE by resume_allowed / MULTIPLE_RUNS / bundle and snapshot codes", "need a Run with a stored bundle and Attempts (a real failed run first) or records no FlowNet writes"},
	{"§1.3.1", "INPUT_RETENTION_EXPIRED / INPUT_FILE_MUTATED / INPUT_FILE_MISSING", "need a CSV-input run and a changed or aged file (CSV1/CSV2 scenarios)"},
	{"§1.3.2-§1.3.4", "scheduler, attempt mapping, retry brake", "need killed, failing or repeated runs (M5-M7 scenarios)"},
	{"§1.5", "HEARTBEAT_ADVANCED, REVISION_CONFLICT, RELEASE_UNCONFIRMED, AUDIT_FAILED, LOCK_READ_FAILED", "need a write between the checks or a failing kintone (fault proxy)"},
	{"§1.5", "STOP_NOT_CONFIRMED by a live local pid / cloud_run_job_execution", "need the owner process alive on this host, or Cloud Run"},
	{"§1.6", "DISTINCT_APPROVER_REQUIRED, CURRENT_ATTEMPT_NOT_UNIQUE, STATE_ATTEMPT_MISMATCH, RESOLVED output", "need a real non-idempotent FAILED / UNKNOWN node with its Attempts"},
	{"§1.6", "COMPENSATION_CANNOT_SUCCEED", "unreachable in the sandbox: --to SUCCESS without --manual-completion is MANUAL_COMPLETION_REQUIRED first, and --manual-completion with --compensation is an argument error"},
	{"§1.9", "ARCHIVED+PENDING, lock_released:false, UNCONFIRMED, LEASE_INTERRUPTED, RUN_READ_FAILED by transport, ARCHIVE_WRITE_FAILED", "need a fault at one request of the CLOSE (fault proxy)"},
	{"§1.9", "RUN_LIVE", "cannot happen in archive-run itself: a live owner holds the lock (LOCK_CONFLICT first); the poller decides it"},
	{"§1.10", "request processing per type, STALE recovery, warnings", "need request records and children (P2-01 / P2-16 scenarios)"},
}

func TestContractProbe(t *testing.T) {
	rows := contractRows()
	passed, ran := 0, 0
	for i, row := range rows {
		started := false
		ok := t.Run(fmt.Sprintf("%02d %s %s", i+1, row.section, row.item), func(t *testing.T) {
			started = true
			p := &probeEnv{sandbox: newSandbox(t, nil).operator(), dir: t.TempDir()}
			p.environ = append(p.environ, p.pollerEnv()...)
			if row.seed != nil {
				row.seed(p)
			}
			args := row.args(p)
			p.before = p.revisions()
			r := p.flownetBin(row.env, args...)
			assert.Equal(t, row.exit, r.code, "exit of %v\nstdout %s\nstderr %s", args, r.stdout, r.stderr)
			if row.jsonOut != nil {
				jsonLine(t, r.stdout, row.jsonOut)
			} else {
				matches(t, "stdout", row.stdout, r.stdout)
			}
			matches(t, "stderr", row.stderr, r.stderr)
			if row.after != nil {
				row.after(t, p)
			}
		})
		if started {
			ran++
			if ok {
				passed++
			}
		}
	}
	t.Logf("contract probe: %d/%d items of product-contract.md §1 answered as the contract says (%d rows in the table); %d items not reachable black-box:",
		passed, ran, len(rows), len(notProbed))
	for _, n := range notProbed {
		t.Logf("  %s %s — %s", n.section, n.item, n.why)
	}
}

func matches(t *testing.T, stream, pattern, got string) {
	t.Helper()
	if pattern == "" {
		assert.Empty(t, got, stream)
		return
	}
	assert.Regexp(t, regexp.MustCompile(pattern), got, stream)
}

// jsonLine checks that stdout is exactly one JSON object line holding want's fields.
func jsonLine(t *testing.T, stdout string, want map[string]any) {
	t.Helper()
	require.True(t, strings.HasSuffix(stdout, "\n") && strings.Count(stdout, "\n") == 1, "one line: %q", stdout)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	got := map[string]any{}
	for k := range want {
		got[k] = doc[k]
	}
	assert.Equal(t, want, got, stdout)
}

// runRejected is run-network --json's early rejection with code.
func runRejected(code string, more map[string]any) map[string]any {
	out := map[string]any{"outcome": "REJECTED", "invocation_result_code": code, "invocation_id": nil, "aggregate_status": nil}
	for k, v := range more {
		out[k] = v
	}
	return out
}

func archiveRejected(code string) map[string]any {
	return map[string]any{"outcome": "REJECTED", "code": code, "run_id": probeRunID, "lock_released": true}
}

func readFixture(p *probeEnv, name string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.network(name))
	require.NoError(p.t, err)
	// The copy lives elsewhere: point its SQL paths back at the fixtures.
	return strings.ReplaceAll(string(b), "../jobs/", filepath.Join(p.fixtures, "jobs")+string(filepath.Separator))
}

// seedR1Run writes an ACTIVE Run of the success network under its real R1 key.
func (p *probeEnv) seedR1Run(runID, businessKey, status string) {
	p.t.Helper()
	r1, err := R1Key(testProfile, probeNet, businessKey)
	require.NoError(p.t, err)
	_, _, err = p.admin.AddRecord(context.Background(), p.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": r1, "record_type": "NETWORK_RUN", "run_id": runID, "network_id": probeNet, "business_key": businessKey,
		"resolved_profile_snapshot": `{"profile":"` + testProfile + `"}`, "status": status, "lifecycle_status": "ACTIVE", "resume_allowed": "true"}))
	require.NoError(p.t, err)
}

func (p *probeEnv) seedState(runID, node, job, status string) {
	p.putNodeState(runID, node, job, "STATE:"+runID+"/"+node, status)
}

// pollerEnv is what poll-requests needs beyond the sandbox: the request app and an
// allow-list of the success network.
func (p *probeEnv) pollerEnv() []string {
	return []string{"KSQL_FLOWNET_REQUEST_APP_ID=" + p.apps["request"].ID,
		"KSQL_FLOWNET_REQUEST_API_TOKEN=" + p.apps["request"].Tokens["poller"],
		"KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH=" + p.allowlist("networks:\n  - network_id: m5_success\n    definition_path: {def}\n")}
}

// allowlist writes an allow-list ({def} = the success network, {bad} = an invalid one);
// "relative" and "missing" name paths that are not absolute or do not exist.
func (p *probeEnv) allowlist(body string) string {
	switch body {
	case "relative":
		return "allowlist.yaml"
	case "missing":
		return filepath.Join(p.dir, "no-allowlist.yaml")
	}
	bad := p.file("bad-network.yaml", "schema_version: 1\nnetwork_id: m5_success\n")
	return p.file("allowlist.yaml", strings.NewReplacer("{def}", p.success(), "{bad}", bad).Replace(body))
}

func forceUnlockArgs(network, owner string) func(*probeEnv) []string {
	return func(p *probeEnv) []string {
		return []string{"force-unlock-network", network, "--profile", testProfile, "--expected-owner-invocation-id", owner,
			"--reason-file", p.reason(), "--evidence-ref", "file:///probe/evidence.json", "--stop-confirmed-by", "operator-a",
			"--stop-evidence-ref", "file:///probe/stop.json", "--stop-method", stopManual}
	}
}

func resolveArgs(to string, extra ...string) func(*probeEnv) []string {
	return func(p *probeEnv) []string {
		return append([]string{"resolve-node", "--run-id", probeRunID, "--node-id", "n1", "--to", to, "--reason-file", p.reason(),
			"--evidence-ref", "file:///probe/evidence.json", "--stop-confirmed-by", "operator-a", "--stop-evidence-ref", "file:///probe/stop.json"}, extra...)
	}
}

func jobUnlockArgs(p *probeEnv, result string) []string {
	return []string{"record-job-unlock", "--result-file", p.file("lock-recovery.json", result), "--run-id", probeRunID, "--node-id", "n1",
		"--reason-file", p.reason(), "--evidence-ref", "file:///probe/evidence.json", "--stop-confirmed-by", "operator-a"}
}

// recoveryOf is force-unlock-job's RELEASED result for job of the sandbox profile.
func recoveryOf(job string) string {
	return `{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"jobKey":"` + testProfile + ":" + job +
		`","recordId":"12","outcome":"RELEASED","before":{"batchId":"b","startedAt":null,"host":"h"},"executedAt":"2026-11-29T10:05:00.000Z"}` + "\n"
}

func cancelArgs(extra ...string) func(*probeEnv) []string {
	return func(p *probeEnv) []string {
		return append([]string{"cancel-run", "--run-id", probeRunID, "--reason-file", p.reason()}, extra...)
	}
}

func archiveArgs() func(*probeEnv) []string {
	return func(p *probeEnv) []string {
		return []string{"archive-run", p.success(), "--run-id", probeRunID, "--reason-file", p.reason()}
	}
}

// replaceOpt sets the value of option name in args.
func replaceOpt(args []string, name, value string) []string {
	out := append([]string{}, args...)
	for i := range out {
		if out[i] == name && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}

// noWrite: the probed command changed no state or audit record.
func noWrite(t *testing.T, p *probeEnv) {
	assert.Equal(t, p.before, p.revisions(), "no state or audit record changed")
}

// noRunOrAuditWrite: only the command's own Network lock record was written.
func noRunOrAuditWrite(t *testing.T, p *probeEnv) {
	locks := map[string]bool{}
	for _, r := range p.all("state", `record_type in ("NETWORK_LOCK")`) {
		locks["state/"+r.ID()] = true
	}
	after := p.revisions()
	for k := range locks {
		delete(after, k)
	}
	assert.Equal(t, p.before, after, "nothing but the Network lock changed")
	assert.Empty(t, p.runningLocks(), "the lock is released")
}

func oneOperationAudit(resultCode string) func(*testing.T, *probeEnv) {
	return func(t *testing.T, p *probeEnv) {
		ops := p.all("audit", `record_type in ("OPERATION_AUDIT")`)
		require.Len(t, ops, 1)
		assert.Equal(t, resultCode, ops[0].Str("result_code"))
	}
}
