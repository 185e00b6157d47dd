package ksqlflow

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// idPattern is the contract's pattern for correlation, attempt and expected job ids.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type runOpts struct {
	file, profile, config, asOf, resultJSON string
	correlationID, attemptID, expectedJobID string
	lockMode, sample                        string
	importCSV, importSHA, exportCSV         multiFlag
	exportEncoding                          string
	dryRun, jsonOut                         bool
	orchestrator                            bool
}

// parseRunFlags parses and checks the flags of `run`; an error here is a usage error
// (exit 1, no result document: the caller's own inputs are wrong).
func parseRunFlags(args []string, stderr io.Writer) (*runOpts, error) {
	o := &runOpts{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.file, "f", "", "SQL job file")
	fs.StringVar(&o.profile, "profile", "", "profile name")
	fs.StringVar(&o.config, "config", "", "config file")
	fs.StringVar(&o.asOf, "as-of", "", "logical date (ISO 8601 with offset)")
	fs.StringVar(&o.resultJSON, "result-json", "", "result document path, or - for stdout")
	fs.StringVar(&o.correlationID, "correlation-id", "", "FlowNet run id")
	fs.StringVar(&o.attemptID, "attempt-id", "", "FlowNet attempt id")
	fs.StringVar(&o.expectedJobID, "expected-job-id", "", "job id the file must declare")
	fs.StringVar(&o.lockMode, "lock", "auto", "auto | local-only")
	fs.StringVar(&o.sample, "sample", "", "sampling (not supported by the sandbox)")
	fs.Var(&o.importCSV, "import-csv", "name=<abs path> (repeatable)")
	fs.Var(&o.importSHA, "expected-import-sha256", "name=<64 hex> (repeatable)")
	fs.Var(&o.exportCSV, "export-csv", "sink=<abs path>: export temp table #sink as CSV (repeatable)")
	fs.StringVar(&o.exportEncoding, "export-encoding", "", "utf8 | sjis (default utf8)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "parse and check only")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result document on stdout (standalone)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := 0
	for _, v := range []string{o.resultJSON, o.correlationID, o.attemptID, o.expectedJobID} {
		if v != "" {
			set++
		}
	}
	if set > 0 && set < 4 {
		// --result-json alone is allowed in standalone mode; the ids only come as a group.
		if !(set == 1 && o.resultJSON != "") {
			return nil, fmt.Errorf("orchestrator flags --result-json, --correlation-id, --attempt-id and --expected-job-id must be given all together or not at all")
		}
	}
	o.orchestrator = set == 4
	if o.orchestrator {
		for name, v := range map[string]string{"--correlation-id": o.correlationID, "--attempt-id": o.attemptID, "--expected-job-id": o.expectedJobID} {
			if !idPattern.MatchString(v) {
				return nil, fmt.Errorf("%s %q does not match ^[A-Za-z0-9._:-]{1,128}$", name, v)
			}
		}
		switch {
		case o.dryRun:
			return nil, fmt.Errorf("--dry-run cannot be combined with orchestrator flags")
		case o.jsonOut:
			return nil, fmt.Errorf("--json cannot be combined with orchestrator flags (the result goes to --result-json)")
		case o.sample != "":
			return nil, fmt.Errorf("--sample cannot be combined with orchestrator flags")
		case o.lockMode == "local-only":
			return nil, fmt.Errorf("--lock local-only cannot be combined with orchestrator flags")
		}
	}
	if o.lockMode != "auto" && o.lockMode != "local-only" {
		return nil, fmt.Errorf("--lock %q: expected auto or local-only", o.lockMode)
	}
	if o.file == "" {
		return nil, fmt.Errorf("-f <sql file> is required")
	}
	if o.resultJSON != "" && o.resultJSON != "-" {
		if _, err := os.Lstat(o.resultJSON); err == nil {
			return nil, fmt.Errorf("--result-json %s already exists (a result is never overwritten)", o.resultJSON)
		}
	}
	if o.asOf != "" {
		if _, err := time.Parse(time.RFC3339Nano, o.asOf); err != nil {
			return nil, fmt.Errorf("--as-of %q: expected ISO 8601 with offset (e.g. 2026-08-15T00:00:00.000Z)", o.asOf)
		}
	}
	return o, nil
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the OS entropy source failing is not recoverable
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// runCmd implements `run`. It returns the process exit code.
func runCmd(args []string, stdout, stderr io.Writer) int {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "ksql-flow run: %v\n", err)
		}
		return 1
	}
	// Signals are watched from the start: the first one asks for a stop at the next
	// statement boundary, the second ends the process at once (no result guaranteed).
	ignoreBrokenPipe()
	var stopped atomic.Bool
	sigCh := make(chan os.Signal, 2)
	signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() { signal.Stop(sigCh); close(done) }()
	go func() {
		for {
			select {
			case s := <-sigCh:
				if stopped.Swap(true) {
					fmt.Fprintf(stderr, "ksql-flow: second signal (%v): exiting now without a result\n", s)
					os.Exit(3)
				}
				fmt.Fprintf(stderr, "ksql-flow: signal %v: stopping at the next statement boundary\n", s)
			case <-done:
				return
			}
		}
	}()
	res := execute(o, stopped.Load, stderr)
	switch {
	case o.resultJSON == "-" || o.jsonOut:
		res.fillFileLists()
		if err := writeJSONLine(stdout, res); err != nil {
			fmt.Fprintf(stderr, "ksql-flow: write result: %v\n", err)
			return 3
		}
	case o.resultJSON != "":
		if err := writeResultFile(o.resultJSON, res); err != nil {
			fmt.Fprintf(stderr, "ksql-flow: %v\n", err)
			return 3
		}
	default:
		msg := ""
		if res.Error != nil {
			msg = ": " + res.Error.Message
		}
		fmt.Fprintf(stdout, "%s %s (exit %d, %d rows read, %d API calls)%s\n", res.Status, res.ResultCode, res.ExitCode, res.ReadCount, res.APICalls, msg)
	}
	return res.ExitCode
}

// execute runs one job and always returns a complete result. Its phases, in order: check
// the inputs (prepare), take the local lock, take the JOB log lock (openJobLog), run the
// statements and write the exports (runStatements); every exit after the JOB log lock
// finishes its record (jobLogHold.close).
func execute(o *runOpts, stopRequested func() bool, stderr io.Writer) *ExecutionResult {
	j := newJobRun(o, stopRequested, stderr)
	res := j.res
	p, stop := j.prepare()
	if stop != nil {
		return stop
	}
	useJobLog := o.lockMode != "local-only"
	c, err := newConn(p.prof, scriptApps(p.sc), useJobLog)
	if err != nil {
		return j.invalid("CONFIG", "%v", err)
	}
	defer func() { res.APICalls = c.calls.Load() }()
	if o.dryRun {
		fmt.Fprintf(stderr, "ksql-flow: dry run: %s parsed, %d statements, job key %s\n", filepath.Base(o.file), len(p.sc.Stmts), p.key)
		return j.finish(nil)
	}

	host, _ := os.Hostname()
	cwd, err := os.Getwd()
	if err != nil {
		return j.finish(&failure{code: "LOCK_UNAVAILABLE", msg: fmt.Sprintf("working directory: %v", err)})
	}
	release, err := acquireLocalLock(cwd, localLock{PID: os.Getpid(), Host: host, Profile: o.profile, StartedAt: j.begin.UTC().Format(time.RFC3339Nano), BatchID: res.ExecutionID},
		p.prof.lockAge())
	if err != nil {
		var held *localLockHeld
		if errors.As(err, &held) {
			return j.finish(&failure{code: "LOCK_CONFLICT", errCode: "LOCAL_LOCK_HELD", msg: err.Error(), retryable: true})
		}
		return j.finish(&failure{code: "LOCK_UNAVAILABLE", msg: err.Error(), retryable: true})
	}
	defer release()

	ctx := context.Background()
	lg, stop := j.openJobLog(ctx, p, c, useJobLog, host)
	if stop != nil {
		return stop
	}
	// From here on the JOB log record holds the lock and must always be finished.
	total := fmt.Sprintf("0/%d", len(p.sc.Stmts))
	if stopRequested() {
		return lg.close(&failure{code: "CANCELLED", msg: "stopped by signal before the first statement"}, total, 0)
	}
	startAt := time.Now()
	if useJobLog {
		lg.rev, err = lg.jl.markStarted(ctx, lg.recID, lg.rev, startAt)
		if err != nil {
			return lg.close(&failure{code: "LOCK_UNAVAILABLE", msg: err.Error(), retryable: true}, total, 0)
		}
	}
	res.ExecutionStarted = true
	res.StartedAt = strPtr(isoMillis(startAt))
	if defect.ResultStartedAtIsAsOf && o.asOf != "" {
		res.StartedAt = strPtr(isoMillis(p.asOf))
	}
	return j.runStatements(ctx, p, c, lg)
}

// jobRun is one execution in progress: its options and the result it fills in.
type jobRun struct {
	o             *runOpts
	stopRequested func() bool
	stderr        io.Writer
	begin         time.Time
	res           *ExecutionResult
}

func newJobRun(o *runOpts, stopRequested func() bool, stderr io.Writer) *jobRun {
	begin := time.Now()
	res := &ExecutionResult{
		FormatVersion: 1, Kind: "EXECUTION_RESULT", Contract: Contract,
		CorrelationID: strPtr(o.correlationID), AttemptID: strPtr(o.attemptID),
		ExecutionID: newUUID(), Profile: o.profile, AsOf: strPtr(o.asOf),
		KsqlFlowVersion: KsqlFlowVersion, EngineVersion: EngineVersion,
		InputFiles: []InputFile{}, OutputFiles: []InputFile{},
	}
	// Until the job file names its job, the result names the job the caller expected, as
	// the real kSQL-Flow's synthetic outcome does (commands/run.js syntheticOutcome).
	res.JobID = strPtr(o.expectedJobID)
	return &jobRun{o: o, stopRequested: stopRequested, stderr: stderr, begin: begin, res: res}
}

// finish sets the outcome (nil = OK) and the end time.
func (j *jobRun) finish(f *failure) *ExecutionResult {
	j.res.setOutcome(f)
	now := time.Now()
	j.res.FinishedAt = isoMillis(now)
	j.res.DurationMs = now.Sub(j.begin).Milliseconds()
	return j.res
}

func (j *jobRun) invalid(cat, format string, a ...any) *ExecutionResult {
	return j.finish(&failure{code: "VALIDATION_ERROR", category: cat, msg: fmt.Sprintf(format, a...)})
}

// jobPlan is what prepare checked: the profile, the script and its inputs and outputs.
type jobPlan struct {
	prof      *Profile
	sc        *Script
	jobID     string
	key       string
	imports   map[string]*importInput
	exports   []exportSink
	exportEnc string
	asOf      time.Time
}

// prepare loads the profile and the job file and checks every option against them; on
// the first problem it returns the finished VALIDATION_ERROR result instead of a plan.
func (j *jobRun) prepare() (*jobPlan, *ExecutionResult) {
	o, res := j.o, j.res
	if o.profile == "" {
		res.Profile = "default" // what the real names the profile of a startup failure
	}
	prof, err := LoadConfig(o.config, o.profile)
	if err != nil {
		return nil, j.invalid("CONFIG", "%v", err)
	}
	o.profile, res.Profile = prof.Name, prof.Name // --profile, else defaultProfile
	if o.orchestrator && !filepath.IsAbs(o.file) {
		return nil, j.invalid("CONFIG", "-f %s: orchestrator mode requires an absolute path", o.file)
	}
	src, err := os.ReadFile(o.file)
	if err != nil {
		return nil, j.invalid("CONFIG", "read job file: %v", err)
	}
	sc, err := ParseScript(string(src))
	if err != nil {
		return nil, j.invalid("SQL", "%s: %v", filepath.Base(o.file), err)
	}
	jobID := jobIDOf(sc, o.file)
	if o.expectedJobID != "" && o.expectedJobID != jobID {
		return nil, j.invalid("CONFIG", "job file declares job id %q, expected %q", jobID, o.expectedJobID)
	}
	res.JobID = &jobID
	if err := CheckScript(sc, prof.appIDs()); err != nil {
		return nil, j.invalid("SQL", "%s: %v", filepath.Base(o.file), err)
	}
	key, err := jobKey(o.profile, jobID)
	if err != nil {
		return nil, j.invalid("CONFIG", "%v", err)
	}
	imports, err := readImports(o.importCSV, o.importSHA)
	if err != nil {
		return nil, j.invalid("CONFIG", "%v", err)
	}
	exports, err := parseExports(o.exportCSV, sc)
	if err != nil {
		return nil, j.invalid("CONFIG", "%v", err)
	}
	exportEnc := firstSet(o.exportEncoding, "utf8")
	if exportEnc != "utf8" && exportEnc != "sjis" {
		return nil, j.invalid("CONFIG", "--export-encoding %q: expected utf8 or sjis", exportEnc)
	}
	for _, st := range sc.Stmts {
		if is, ok := st.(*ImportStmt); ok && imports[is.Input] == nil {
			return nil, j.invalid("SQL", "%s: line %d: IMPORT names input %q, which no --import-csv gives", filepath.Base(o.file), is.Pos.Line, is.Input)
		}
	}
	if o.sample != "" {
		return nil, j.invalid("CONFIG", "--sample is not supported by the sandbox kSQL-Flow")
	}
	asOf := j.begin
	if o.asOf != "" {
		asOf, _ = time.Parse(time.RFC3339Nano, o.asOf) // checked by parseRunFlags
	}
	return &jobPlan{prof: prof, sc: sc, jobID: jobID, key: key, imports: imports, exports: exports, exportEnc: exportEnc, asOf: asOf}, nil
}

// jobLogHold is the JOB log record that holds the job lock (none in local-only mode).
type jobLogHold struct {
	j     *jobRun
	jl    *jobLog
	use   bool
	recID string
	rev   string
	key   string
	prof  *Profile
}

// openJobLog inserts the RUNNING JOB log record that is the job lock; when it cannot, it
// returns the finished LOCK_CONFLICT or LOCK_UNAVAILABLE result instead.
func (j *jobRun) openJobLog(ctx context.Context, p *jobPlan, c *conn, useJobLog bool, host string) (*jobLogHold, *ExecutionResult) {
	o := j.o
	execID := j.res.ExecutionID
	lg := &jobLogHold{j: j, jl: &jobLog{c: c}, use: useJobLog, key: p.key, prof: p.prof}
	if !useJobLog {
		return lg, nil
	}
	lg.jl.app = p.prof.LogApp.AppID
	rec := map[string]any{
		"record_type": "JOB", "status": logRunning, "batch_id": execID, "execution_id": execID,
		"correlation_id": o.correlationID, "attempt_id": o.attemptID, "job_id": p.jobID,
		"parent_batch_id": "", "job_key": p.key, "script_name": filepath.Base(o.file),
		"profile": o.profile, "executed_by": executedBy(), "host": host, "git_ref": "",
		"ksql_version": KsqlFlowVersion, "started_at": kintoneTime(j.begin),
	}
	if o.asOf != "" {
		rec["as_of"] = kintoneTime(p.asOf)
	}
	if defect.JobLogWrongExecutionId {
		rec["execution_id"] = newUUID() // planted defect: the JOB log mints its own id instead of the result's executionId
	}
	if defect.JobLogWrongCorrelation {
		rec["correlation_id"] = o.attemptID // planted defect: the two orchestrator ids mixed up
	}
	var err error
	lg.recID, lg.rev, err = lg.jl.acquire(ctx, p.key, execID, kintoneapi.Values(rec))
	if err != nil {
		var lc *lockConflictError
		if errors.As(err, &lc) {
			return nil, j.finish(&failure{code: "LOCK_CONFLICT", msg: err.Error(), retryable: true})
		}
		return nil, j.finish(&failure{code: "LOCK_UNAVAILABLE", msg: err.Error(), retryable: true})
	}
	return lg, nil
}

// close finishes the result and then the JOB log record with it.
func (lg *jobLogHold) close(f *failure, stmts string, readRows int) *ExecutionResult {
	out := lg.j.finish(f)
	if !lg.use {
		return out
	}
	c := lg.jl.c
	fields := map[string]any{
		"status": jobLogStatus(out.ResultCode), "finished_at": kintoneTime(time.Now()),
		"duration_sec": fmt.Sprintf("%.3f", float64(out.DurationMs)/1000), "read_count": readRows,
		"written_count": 0, "deleted_count": 0, "api_calls": c.calls.Load() + 1,
		"log_detail": fmt.Sprintf("resultCode=%s exitCode=%d statements=%s", out.ResultCode, out.ExitCode, stmts),
	}
	if out.Error != nil {
		fields["error_message"] = out.Error.Message
	}
	// The final write must happen even after a timeout: a fresh context.
	fctx, cancel := context.WithTimeout(context.Background(), time.Duration(lg.prof.HTTPTimeoutMs)*time.Millisecond)
	defer cancel()
	if err := lg.jl.finish(fctx, lg.recID, lg.rev, lg.key, fields); err != nil {
		fmt.Fprintf(lg.j.stderr, "ksql-flow: %v\n", err)
	}
	return out
}

// runStatements runs the script under the job timeout, writes the exports of a run that
// succeeded and closes the JOB log with the outcome.
func (j *jobRun) runStatements(ctx context.Context, p *jobPlan, c *conn, lg *jobLogHold) *ExecutionResult {
	res, sc, prof := j.res, p.sc, p.prof
	timeout := time.Duration(limitOr(prof.Limits.BatchTimeoutSec)) * time.Second
	if sc.Header.TimeoutSec != nil {
		timeout = time.Duration(*sc.Header.TimeoutSec) * time.Second
	}
	rctx, cancel := context.WithCancel(ctx)
	if timeout > 0 { // batchTimeoutSec null and no timeout header: no deadline
		rctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	done := 0
	reader := &appReader{c: c, maxCalls: limitOr(prof.Limits.MaxAPICalls), stop: j.stopRequested}
	eng := &Engine{
		Reader: reader,
		Import: func(ctx context.Context, s *ImportStmt) (*Table, error) {
			t, rc, n, err := importCSV(ctx, reader, s, p.imports[s.Input])
			res.WrittenCount += n
			if rc.Rows > 0 || err == nil {
				res.InputFiles = append(res.InputFiles, rc)
			}
			return t, err
		},
		AsOf:        p.asOf,
		Loc:         prof.location(),
		MaxReadRows: int(limitOr(prof.Limits.MaxReadRows)),
		MaxTempRows: int(limitOr(prof.Limits.MaxTempRows)),
		Boundary: func(i int) error {
			done = i
			if j.stopRequested() {
				return errCancelled
			}
			fmt.Fprintf(j.stderr, "ksql-flow: statement %d/%d\n", i+1, len(sc.Stmts))
			return nil
		},
	}
	err := eng.Run(rctx, sc)
	if err == nil {
		done = len(sc.Stmts)
		if len(p.exports) > 0 {
			rc, xerr := writeExports(p.exports, eng.temps, p.exportEnc)
			if xerr != nil {
				res.ReadCount = eng.ReadRows
				return lg.close(&failure{code: "SQL_ERROR", errCode: "EXPORT_FAILED", msg: xerr.Error()}, fmt.Sprintf("%d/%d", done, len(sc.Stmts)), eng.ReadRows)
			}
			res.OutputFiles = rc
		}
	}
	res.ReadCount = eng.ReadRows
	return lg.close(classifyRunError(err, rctx), fmt.Sprintf("%d/%d", done, len(sc.Stmts)), eng.ReadRows)
}

// classifyRunError turns an execution error into a failure (nil = OK).
func classifyRunError(err error, ctx context.Context) *failure {
	if err == nil {
		return nil
	}
	var ae *AssertError
	var se *SQLError
	switch {
	case errors.Is(err, errCancelled):
		return &failure{code: "CANCELLED", msg: err.Error()}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &failure{code: "EXECUTION_TIMEOUT", msg: "job timeout reached: " + err.Error()}
	case errors.As(err, &ae):
		return &failure{code: "ASSERT_FAILED", msg: ae.Error()}
	case errors.As(err, &se):
		return &failure{code: "SQL_ERROR", msg: se.Error()}
	case errors.Is(err, errAPIBudget):
		return &failure{code: "API_ERROR", errCode: "API_CALL_LIMIT", msg: err.Error()}
	}
	code, retry := classifyAPIError(err)
	f := &failure{code: code, msg: err.Error(), retryable: retry}
	var ke *kintoneapi.APIError
	if errors.As(err, &ke) && ke.Code != "" {
		f.errCode = ke.Code
	}
	return f
}

// scriptApps lists the logical apps the script reads (their tokens are needed).
func scriptApps(sc *Script) []string {
	set := map[string]bool{}
	var walk func(q *Query)
	walk = func(q *Query) {
		for _, a := range q.Arms {
			if !a.From.Temp && !a.From.None {
				set[a.From.Name] = true
			}
		}
	}
	for _, st := range sc.Stmts {
		switch s := st.(type) {
		case *SelectStmt:
			walk(s.Query)
		case *CreateTempStmt:
			walk(s.Query)
		case *AssertStmt:
			for _, side := range []Scalar{s.Left, s.Right} {
				if side.Query != nil {
					walk(side.Query)
				}
			}
		case *ImportStmt:
			set[s.App] = true
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	return out
}

func executedBy() string {
	for _, v := range []string{"USER", "USERNAME"} {
		if s := os.Getenv(v); s != "" {
			return s
		}
	}
	return "unknown"
}

func firstSet(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
