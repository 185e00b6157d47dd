package ksqlflow

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "time/tzdata" // profile timezones must resolve on Windows too
)

const usage = `usage: flowsandbox ksql-flow <command> [flags]

  capabilities --json
  describe-profile --profile <p> --config <c> --json
  inspect-job -f <sql> --profile <p> --config <c> --json
  run -f <sql> --profile <p> --config <c> [--as-of <iso>] [--result-json <path|->
      --correlation-id <id> --attempt-id <id> --expected-job-id <id>] [--json] [--dry-run]
  validate -f <sql> [--profile <p> --config <c>] | validate --check-logapp --profile <p> --config <c>
  inspect-lock --job-key <profile:job> --profile <p> --config <c> --json
  force-unlock-job --job-key <k> --reason <text> --confirmed-by <who> --evidence-ref <uri>
      --profile <p> --config <c> --json
`

// Main is the entry point of `flowsandbox ksql-flow …`.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 1
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) int{
		"capabilities":     capabilitiesCmd,
		"describe-profile": describeProfileCmd,
		"inspect-job":      inspectJobCmd,
		"run":              runCmd,
		"validate":         validateCmd,
		"inspect-lock":     inspectLockCmd,
		"force-unlock-job": forceUnlockCmd,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "ksql-flow: unknown command %q\n%s", args[0], usage)
		return 1
	}
	return cmd(args[1:], stdout, stderr)
}

// newFlags makes a flag set whose errors go to stderr and never exit the process.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ksql-flow %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return false
	}
	return true
}

// ---- capabilities ----

// Capabilities is the CAPABILITIES document.
type Capabilities struct {
	FormatVersion      int      `json:"formatVersion"`
	Kind               string   `json:"kind"`
	KsqlFlowVersion    string   `json:"ksqlFlowVersion"`
	EngineVersion      string   `json:"engineVersion"`
	ExecutionContracts []string `json:"executionContracts"`
	ResultSchema       struct {
		ID       string `json:"$id"`
		Contract string `json:"contract"`
	} `json:"resultSchema"`
	Features struct {
		ResultJSON              bool   `json:"resultJson"`
		CorrelationIDs          bool   `json:"correlationIds"`
		DescribeProfile         bool   `json:"describeProfile"`
		InspectJob              bool   `json:"inspectJob"`
		DurableExecutionStarted bool   `json:"durableExecutionStarted"`
		GracefulCancel          bool   `json:"gracefulCancel"`
		JobLockProtocol         string `json:"jobLockProtocol"`
		ImportCSV               *bool  `json:"importCsv,omitempty"`
		ResultCSV               bool   `json:"resultCsv"`
	} `json:"features"`
}

// capabilitiesDoc needs no config and no network. importCsv (IMPORT INTO, csvimport.go)
// and resultCsv (--export-csv, csvexport.go) are true. (A legacy kSQL-Flow, before CSV
// import, is played for any kSQL-Flow by flowtest's ksql-flow-wrapper, as the stub of
// scenarios.md §2.8.1 was.)
func capabilitiesDoc() Capabilities {
	var c Capabilities
	c.FormatVersion, c.Kind = 1, "CAPABILITIES"
	c.KsqlFlowVersion, c.EngineVersion = KsqlFlowVersion, EngineVersion
	c.ExecutionContracts = []string{Contract}
	c.ResultSchema.ID, c.ResultSchema.Contract = resultSchemaID, Contract
	f := &c.Features
	f.ResultJSON, f.CorrelationIDs, f.DescribeProfile, f.InspectJob = true, true, true, true
	f.DurableExecutionStarted, f.GracefulCancel, f.JobLockProtocol = true, true, "profile-job-v0"
	importCSV := true
	f.ImportCSV = &importCSV
	f.ResultCSV = true
	return c
}

func capabilitiesCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("capabilities", stderr)
	jsonOut := fs.Bool("json", false, "machine output")
	if !parseFlags(fs, args, stderr) {
		return 1
	}
	c := capabilitiesDoc()
	if *jsonOut {
		writeJSONLine(stdout, c)
		return 0
	}
	fmt.Fprintf(stdout, "kSQL-Flow %s (engine %s), contracts %s, job lock %s\n", c.KsqlFlowVersion, c.EngineVersion, strings.Join(c.ExecutionContracts, ","), c.Features.JobLockProtocol)
	return 0
}

// ---- describe-profile ----

// ProfileDescription is the PROFILE_DESCRIPTION document (never holds tokens). Its shape is
// the real kSQL-Flow 0.9.0's (commands/describeProfile.js): app ids, logApp.appId and
// guestSpaceId are JSON integers, which the real FlowNet 1.0.0 requires
// (executor/ksql-flow-cli.js isProfileDescription: Number.isSafeInteger); the limits are
// numbers or null.
type ProfileDescription struct {
	FormatVersion int              `json:"formatVersion"`
	Kind          string           `json:"kind"`
	Profile       string           `json:"profile"`
	BaseURL       string           `json:"baseUrl"`
	GuestSpaceID  *int64           `json:"guestSpaceId"`
	Timezone      *string          `json:"timezone"`
	Apps          map[string]int64 `json:"apps"`
	LogApp        *LogAppDesc      `json:"logApp"`
	Limits        Limits           `json:"limits"`
	Retry         Retry            `json:"retry"`
	HTTPTimeoutMs float64          `json:"httpTimeoutMs"`
}

// LogAppDesc is describe-profile's logApp: the logical name and its app id.
type LogAppDesc struct {
	Name  string `json:"name"`
	AppID int64  `json:"appId"`
}

type commonFlags struct {
	profile, config *string
	jsonOut         *bool
}

func addCommon(fs *flag.FlagSet) commonFlags {
	return commonFlags{
		profile: fs.String("profile", "", "profile name"),
		config:  fs.String("config", "", "config file"),
		jsonOut: fs.Bool("json", false, "machine output"),
	}
}

// parseJSONOnly parses the flags of a command that has machine output only; false (said on
// stderr) when they are off or --json is missing.
func parseJSONOnly(fs *flag.FlagSet, cf commonFlags, args []string, stderr io.Writer) bool {
	if !parseFlags(fs, args, stderr) {
		return false
	}
	if !*cf.jsonOut {
		fmt.Fprintf(stderr, "ksql-flow %s: --json is required\n", fs.Name())
		return false
	}
	return true
}

// loadExplicit loads the profile of a machine-JSON command, which (as in the real) needs
// --profile and --config spelled out, never the defaults.
func loadExplicit(name string, cf commonFlags) (*Profile, error) {
	if *cf.profile == "" || *cf.config == "" {
		return nil, cfgErr("%s には --profile <p> と --config <path> が必要です", name)
	}
	return LoadConfig(*cf.config, *cf.profile)
}

// profileWithLogApp loads the profile of a job-lock command, which works on the JOB log app.
func profileWithLogApp(name string, cf commonFlags) (*Profile, error) {
	p, err := loadExplicit(name, cf)
	if err == nil && p.LogApp == nil {
		err = fmt.Errorf("profile %q has no logApp", *cf.profile)
	}
	return p, err
}

func describeProfileCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("describe-profile", stderr)
	cf := addCommon(fs)
	if !parseJSONOnly(fs, cf, args, stderr) {
		return 1
	}
	p, err := loadExplicit("describe-profile", cf)
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow describe-profile: %v\n", err)
		return 1
	}
	d, err := describe(p, p.Name)
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow describe-profile: %v\n", err)
		return 1
	}
	writeJSONLine(stdout, d)
	return 0
}

// ---- inspect-job ----

// Diagnostic is one finding of inspect-job / validate.
type Diagnostic struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
}

// JobInspection is the JOB_INSPECTION document, shaped as the real kSQL-Flow 0.9.0's
// (commands/inspectJob.js): jobId is always a string (the header's name, else the file
// name without .sql), and diagnostics are reported in the document, not by the exit code.
type JobInspection struct {
	FormatVersion            int          `json:"formatVersion"`
	Kind                     string       `json:"kind"`
	JobID                    string       `json:"jobId"`
	FileName                 string       `json:"fileName"`
	Dialect                  int          `json:"dialect"`
	StatementCount           int          `json:"statementCount"`
	DependsOn                []string     `json:"dependsOn"`
	TimeoutSec               *int         `json:"timeoutSec"`
	Diagnostics              []Diagnostic `json:"diagnostics"`
	NondeterministicElements []Diagnostic `json:"nondeterministicElements"`
}

// jobIDOf is the job id of a script: its header name, else the file name without a
// trailing .sql (any case), as the real loadJobFile (jobs.js) names it.
func jobIDOf(sc *Script, path string) string {
	if sc != nil && sc.Header.Name != "" {
		return sc.Header.Name
	}
	base := filepath.Base(path)
	if len(base) > 4 && strings.EqualFold(base[len(base)-4:], ".sql") {
		return base[:len(base)-4]
	}
	return base
}

// inspectFile parses and checks a job file against the profile's apps (nil = no app check).
// An unreadable file is an error (no document), as in the real kSQL-Flow.
func inspectFile(path string, apps map[string]string) (JobInspection, *Script, error) {
	ji := JobInspection{FormatVersion: 1, Kind: "JOB_INSPECTION", FileName: filepath.Base(path), Dialect: 1,
		DependsOn: []string{}, Diagnostics: []Diagnostic{}, NondeterministicElements: []Diagnostic{}}
	src, err := os.ReadFile(path)
	if err != nil {
		return ji, nil, fmt.Errorf("cannot read job file %s: %v", path, err)
	}
	sc, err := ParseScript(string(src))
	if err == nil {
		err = CheckScript(sc, apps)
	}
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			ji.Diagnostics = append(ji.Diagnostics, Diagnostic{Code: se.Code, Severity: "error", Line: se.Pos.Line, Column: se.Pos.Col, Message: se.Msg})
		} else {
			ji.Diagnostics = append(ji.Diagnostics, Diagnostic{Code: diagSyntax, Severity: "error", Message: err.Error()})
		}
	}
	ji.JobID = jobIDOf(sc, path)
	if sc == nil {
		return ji, nil, nil
	}
	ji.Dialect, ji.StatementCount, ji.TimeoutSec = sc.Header.Dialect, len(sc.Stmts), sc.Header.TimeoutSec
	if sc.Header.DependsOn != nil {
		ji.DependsOn = sc.Header.DependsOn
	}
	if len(ji.Diagnostics) > 0 {
		return ji, nil, nil
	}
	return ji, sc, nil
}

// inspectJobCmd prints the JOB_INSPECTION and exits 0 whatever the diagnostics say (the real
// inspect-job returns EXIT.OK after writing the document; FlowNet reads jobId and the
// nondeterministic elements). Only a config or file that cannot be read exits 1.
func inspectJobCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect-job", stderr)
	file := fs.String("f", "", "SQL job file")
	cf := addCommon(fs)
	if !parseFlags(fs, args, stderr) {
		return 1
	}
	if *file == "" || !*cf.jsonOut {
		fmt.Fprintln(stderr, "ksql-flow inspect-job: -f and --json are required")
		return 1
	}
	p, err := loadExplicit("inspect-job", cf)
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow inspect-job: %v\n", err)
		return 1
	}
	ji, _, err := inspectFile(*file, p.appIDs())
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow inspect-job: %v\n", err)
		return 1
	}
	writeJSONLine(stdout, ji)
	return 0
}

// ---- validate ----

func validateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr)
	file := fs.String("f", "", "SQL job file")
	checkLog := fs.Bool("check-logapp", false, "check that the JOB log app is reachable and has the fields")
	cf := addCommon(fs)
	if !parseFlags(fs, args, stderr) {
		return 1
	}
	if *file == "" && !*checkLog {
		fmt.Fprintln(stderr, "ksql-flow validate: -f <sql> or --check-logapp is required")
		return 1
	}
	var apps map[string]string
	var prof *Profile
	if *cf.config != "" || *cf.profile != "" || *checkLog {
		p, err := LoadConfig(*cf.config, *cf.profile)
		if err != nil {
			fmt.Fprintf(stderr, "ksql-flow validate: %v\n", err)
			return 1
		}
		prof, apps = p, p.appIDs()
	}
	ok := true
	if *file != "" {
		ji, _, err := inspectFile(*file, apps)
		if err != nil {
			fmt.Fprintf(stderr, "ksql-flow validate: %v\n", err)
			return 1
		}
		for _, d := range ji.Diagnostics {
			fmt.Fprintf(stderr, "%s:%d:%d: %s %s\n", ji.FileName, d.Line, d.Column, d.Code, d.Message)
			ok = false
		}
		if ok {
			fmt.Fprintf(stdout, "OK: %s (%d statements)\n", ji.FileName, ji.StatementCount)
		}
	}
	if *checkLog {
		if err := checkLogApp(prof); err != nil {
			fmt.Fprintf(stderr, "ksql-flow validate --check-logapp: %v\n", err)
			ok = false
		} else {
			fmt.Fprintf(stdout, "OK: JOB log app %s\n", prof.LogApp.AppID)
		}
	}
	if !ok {
		return 1
	}
	return 0
}

// requiredLogFields are the JOB log fields the sandbox writes or FlowNet reads.
var requiredLogFields = []string{"record_type", "status", "batch_id", "correlation_id", "attempt_id", "execution_id",
	"job_id", "runner_execution_started_at", "job_key", "job_key_done", "as_of", "started_at", "finished_at"}

func checkLogApp(p *Profile) error {
	c, err := newConn(p, nil, true)
	if err != nil {
		return err
	}
	var out struct {
		Properties map[string]any `json:"properties"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.HTTPTimeoutMs)*time.Millisecond)
	defer cancel()
	path := "/k/v1/app/form/fields.json?app=" + url.QueryEscape(p.LogApp.AppID)
	if err := c.kc.Do(ctx, "GET", path, c.kc.Tokens[p.LogApp.AppID], nil, &out); err != nil {
		return fmt.Errorf("read JOB log form: %w", err)
	}
	var missing []string
	for _, f := range requiredLogFields {
		if _, ok := out.Properties[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("JOB log app %s lacks fields %v", p.LogApp.AppID, missing)
	}
	return nil
}

// ---- inspect-lock ----

// LockInspection is the LOCK_INSPECTION_RESULT document.
type LockInspection struct {
	Kind          string      `json:"kind"`
	FormatVersion int         `json:"formatVersion"`
	JobKey        string      `json:"jobKey"`
	Locked        *bool       `json:"locked"`
	Record        *LockRecord `json:"record"`
	InspectedAt   string      `json:"inspectedAt"`
	Error         *struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	} `json:"error,omitempty"`
}

func inspectLockCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect-lock", stderr)
	key := fs.String("job-key", "", "<profile>:<job_id>")
	cf := addCommon(fs)
	if !parseJSONOnly(fs, cf, args, stderr) {
		return 1
	}
	if err := checkJobKeyArg(*key); err != nil {
		fmt.Fprintf(stderr, "ksql-flow inspect-lock: %v\n", err)
		return 1
	}
	p, err := profileWithLogApp(fs.Name(), cf)
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow inspect-lock: %v\n", err)
		return 1
	}
	doc := LockInspection{Kind: "LOCK_INSPECTION_RESULT", FormatVersion: 1, JobKey: *key}
	unavailable := func(err error) int {
		doc.InspectedAt = isoMillis(time.Now())
		doc.Error = &struct {
			Code    string `json:"code"`
			Message string `json:"message,omitempty"`
		}{"LOCK_QUERY_UNAVAILABLE", err.Error()}
		writeJSONLine(stdout, doc)
		return 3
	}
	c, err := newConn(p, nil, true)
	if err != nil {
		return unavailable(err)
	}
	jl := &jobLog{c: c, app: p.LogApp.AppID}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.HTTPTimeoutMs)*time.Millisecond)
	defer cancel()
	recs, err := jl.findByKey(ctx, *key)
	if err != nil {
		return unavailable(err)
	}
	doc.InspectedAt = isoMillis(time.Now())
	locked := len(recs) > 0
	doc.Locked = &locked
	if locked {
		r := recs[0]
		doc.Record = &LockRecord{RecordID: r.ID(), BatchID: r.Str("batch_id"), StartedAt: optStr(r.Str("runner_execution_started_at")),
			Host: r.Str("host"), ScriptName: r.Str("script_name")}
	}
	writeJSONLine(stdout, doc)
	return 0
}

// ---- force-unlock-job ----

// LockRecovery is the LOCK_RECOVERY_RESULT document.
type LockRecovery struct {
	Kind          string        `json:"kind"`
	FormatVersion int           `json:"formatVersion"`
	JobKey        string        `json:"jobKey"`
	RecordID      *string       `json:"recordId"`
	Outcome       string        `json:"outcome"`
	Before        *unlockBefore `json:"before"`
	ExecutedAt    string        `json:"executedAt"`
	NextAction    string        `json:"nextAction,omitempty"`
}

// outcomeExit is the exit code of each force-unlock outcome.
var outcomeExit = map[string]int{outReleased: 0, outNotFound: 0, outNotRunning: 0, outUnconfirmed: 3, outConflict: 5}

func forceUnlockCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("force-unlock-job", stderr)
	key := fs.String("job-key", "", "<profile>:<job_id>")
	reason := fs.String("reason", "", "why the lock is released")
	confirmedBy := fs.String("confirmed-by", "", "who confirmed the holder is stopped")
	evidence := fs.String("evidence-ref", "", "absolute URI of the stop evidence")
	cf := addCommon(fs)
	if !parseJSONOnly(fs, cf, args, stderr) {
		return 1
	}
	if err := checkJobKeyArg(*key); err != nil {
		fmt.Fprintf(stderr, "ksql-flow force-unlock-job: %v\n", err)
		return 1
	}
	if *evidence != "" {
		u, err := url.Parse(*evidence)
		if err != nil || !u.IsAbs() || (u.Host == "" && u.Opaque == "" && u.Path == "") {
			fmt.Fprintf(stderr, "ksql-flow force-unlock-job: --evidence-ref %q must be an absolute URI\n", *evidence)
			return 1
		}
	}
	p, err := profileWithLogApp(fs.Name(), cf)
	if err != nil {
		fmt.Fprintf(stderr, "ksql-flow force-unlock-job: %v\n", err)
		return 1
	}
	if prof, _, _ := strings.Cut(*key, ":"); prof != *cf.profile {
		fmt.Fprintf(stderr, "ksql-flow force-unlock-job: --job-key %q does not belong to profile %q\n", *key, *cf.profile)
		return 1
	}
	doc := LockRecovery{Kind: "LOCK_RECOVERY_RESULT", FormatVersion: 1, JobKey: *key}
	emit := func() int {
		doc.ExecutedAt = isoMillis(time.Now())
		writeJSONLine(stdout, doc)
		return outcomeExit[doc.Outcome]
	}
	// Without all three confirmations nothing is read or written: the operator has not
	// confirmed that the holder is stopped.
	if strings.TrimSpace(*reason) == "" || strings.TrimSpace(*confirmedBy) == "" || *evidence == "" {
		doc.Outcome = outUnconfirmed
		doc.NextAction = "confirm the holder is stopped and pass --reason, --confirmed-by and --evidence-ref"
		return emit()
	}
	c, err := newConn(p, nil, true)
	if err != nil {
		doc.Outcome, doc.NextAction = outUnconfirmed, err.Error()
		return emit()
	}
	jl := &jobLog{c: c, app: p.LogApp.AppID}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.HTTPTimeoutMs)*time.Millisecond)
	defer cancel()
	doc.Outcome, doc.RecordID, doc.Before, doc.NextAction = jl.forceUnlock(ctx, unlockRequest{
		key: *key, reason: *reason, confirmedBy: *confirmedBy, evidenceRef: *evidence, now: time.Now(), eventID: "job_unlock_" + newUUID(),
	})
	return emit()
}

// describe builds the PROFILE_DESCRIPTION of a loaded profile: every app of the profile
// (the log app's entry included), logApp as {name, appId}, the limits with null for none.
func describe(p *Profile, name string) (ProfileDescription, error) {
	d := ProfileDescription{FormatVersion: 1, Kind: "PROFILE_DESCRIPTION", Profile: name, BaseURL: normalizeBaseURL(p.BaseURL),
		GuestSpaceID: p.GuestSpaceID, Timezone: p.Timezone, Apps: map[string]int64{}, Limits: p.Limits, Retry: p.Retry, HTTPTimeoutMs: p.HTTPTimeoutMs}
	for app, a := range p.Apps {
		d.Apps[app] = a.ID
	}
	if p.LogApp != nil {
		d.LogApp = &LogAppDesc{Name: p.LogApp.Name, AppID: p.Apps[p.LogApp.Name].ID}
	}
	return d, nil
}

// normalizeBaseURL is the real kSQL-Flow's normalisation of baseUrl for describe-profile
// (WHATWG URL serialisation, trailing slashes cut): scheme and host in lower case, the
// scheme's default port dropped.
func normalizeBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return strings.TrimRight(raw, "/")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	return strings.TrimRight(u.String(), "/")
}
