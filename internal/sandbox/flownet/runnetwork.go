package flownet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// runOptions are run-network's parsed arguments.
type runOptions struct {
	network                   string
	businessKey, scheduledFor string
	hasBusinessKey, hasSched  bool
	resume                    bool
	resumeRun, rerunFrom      string
	json                      bool
	bin, config, workdir      string
}

// runOutput is run-network's --json line (§1.3).
type runOutput struct {
	Outcome              string   `json:"outcome"`
	RunID                *string  `json:"run_id"`
	InvocationID         *string  `json:"invocation_id"`
	AggregateStatus      *string  `json:"aggregate_status"`
	InvocationResultCode string   `json:"invocation_result_code"`
	RetryBrakeNodeIDs    []string `json:"retry_brake_node_ids"`
	BlockedRunIDs        []string `json:"blocked_run_ids"`
}

// plantedRunJSON is the --json line as printed: out normalized, or as a planted defect of
// the JSON line alone (the exit code and the records stay right) prints it.
func plantedRunJSON(out runOutput, resume bool) runOutput {
	if defect.RunJsonListsNull {
		if len(out.RetryBrakeNodeIDs) == 0 && len(out.BlockedRunIDs) == 0 {
			out.RetryBrakeNodeIDs, out.BlockedRunIDs = nil, nil // planted defect: empty id lists printed as null, not []
		}
		return out
	}
	out = out.normalized()
	if defect.RunJsonAggregateStale && (out.Outcome == "NEW" || out.Outcome == "RESUME") {
		out.AggregateStatus = strp(StatusRunning) // planted defect: the Run's status read before the scheduler's last recompute
	}
	if defect.RunJsonOutcomeFromFlag && resume && out.Outcome == "NEW" {
		out.Outcome = "RESUME" // planted defect: the outcome follows --resume, not whether a Run was created
	}
	return out
}

// normalized makes the array fields [] rather than null.
func (o runOutput) normalized() runOutput {
	if o.RetryBrakeNodeIDs == nil {
		o.RetryBrakeNodeIDs = []string{}
	}
	if o.BlockedRunIDs == nil {
		o.BlockedRunIDs = []string{}
	}
	return o
}

func parseRunArgs(args []string) (runOptions, []string) {
	var o runOptions
	var problems []string
	seen := map[string]bool{}
	value := func(i *int, name string) (string, bool) {
		if seen[name] {
			problems = append(problems, name+" was specified more than once")
		}
		seen[name] = true
		if *i+1 >= len(args) || strings.HasPrefix(args[*i+1], "--") {
			problems = append(problems, name+" requires a value")
			return "", false
		}
		*i++
		return args[*i], true
	}
	flag := func(name string) {
		if seen[name] {
			problems = append(problems, name+" was specified more than once")
		}
		seen[name] = true
	}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--business-key":
			o.businessKey, o.hasBusinessKey = value(&i, a)
		case "--scheduled-for":
			o.scheduledFor, o.hasSched = value(&i, a)
		case "--resume":
			flag(a)
			o.resume = true
		case "--resume-run":
			o.resumeRun, _ = value(&i, a)
		case "--rerun-from":
			o.rerunFrom, _ = value(&i, a)
		case "--json":
			flag(a)
			o.json = true
		case "--ksql-flow-bin":
			o.bin, _ = value(&i, a)
		case "--ksql-flow-config":
			o.config, _ = value(&i, a)
		case "--ksql-flow-workdir":
			o.workdir, _ = value(&i, a)
		default:
			positional, problems = positionalOrUnknown(a, positional, problems)
		}
	}
	if len(positional) != 1 {
		problems = append(problems, "exactly one <network> path is required")
	} else {
		o.network = positional[0]
	}
	if seen["--resume-run"] && (o.resume || seen["--scheduled-for"] || seen["--business-key"]) {
		problems = append(problems, "--resume-run cannot be combined with --resume, --scheduled-for or --business-key")
	}
	if seen["--rerun-from"] && !o.resume && !seen["--resume-run"] {
		problems = append(problems, "--rerun-from requires --resume or --resume-run")
	}
	return o, problems
}

// runNetwork is `run-network <network> …`.
func (c *cli) runNetwork(args []string) int {
	o, problems := parseRunArgs(args)
	if len(problems) > 0 {
		if o.json || slices.Contains(args, "--json") {
			c.printJSON(runOutput{Outcome: "REJECTED", RunID: strp(o.resumeRun), InvocationResultCode: CodeInvalidArguments}.normalized())
		}
		return c.argumentError("run-network", problems)
	}
	out, err := c.executeRunNetwork(context.Background(), o)
	if err != nil {
		code := errCode(err, "RUN_NETWORK_FAILED")
		if out.Outcome == "" {
			out.Outcome = "REJECTED"
			out.InvocationResultCode = code
			if out.RunID == nil {
				out.RunID = strp(o.resumeRun)
			}
		}
		if out.InvocationResultCode == "" {
			out.InvocationResultCode = code
		}
		if o.json {
			c.printJSON(out.normalized())
		}
		fmt.Fprintf(c.stderr, "Error [%s]: %s\n", code, err.Error())
		if len(out.BlockedRunIDs) > 0 {
			fmt.Fprintf(c.stderr, "Blocking run_id(s): %s\n", strings.Join(out.BlockedRunIDs, ", "))
		}
		return 1
	}
	if o.json {
		c.printJSON(plantedRunJSON(out, o.resume))
	} else if out.Outcome == "NOOP" {
		fmt.Fprintf(c.stdout, "NO-OP: Run %s is already SUCCESS; nothing was executed.\n", *out.RunID)
	} else {
		label := out.Outcome
		if defect.ResumePrintsNew && label == "RESUME" {
			label = "NEW" // planted defect: the summary line names every Invocation NEW
		}
		id := *out.RunID
		if defect.ResumeReportsInvocationId && out.Outcome == "RESUME" && out.InvocationID != nil {
			id = *out.InvocationID // planted defect: the resume summary names the Invocation where the Run belongs
		}
		if defect.NewRunReportsInvocationId && out.Outcome == "NEW" && out.InvocationID != nil {
			id = *out.InvocationID // planted defect: the same slip on the summary of a new Run
		}
		fmt.Fprintf(c.stdout, "%s: Run %s finished with aggregate %s (%s).\n", label, id, *out.AggregateStatus, out.InvocationResultCode)
	}
	if out.Outcome == "NOOP" || (out.AggregateStatus != nil && *out.AggregateStatus == StatusSuccess) {
		return 0
	}
	return 1
}

func (c *cli) printJSON(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(c.stdout, string(b))
}

func errCode(err error, fallback string) string {
	var ce *codedError
	if errors.As(err, &ce) && ce.Code != "" {
		return ce.Code
	}
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke.Code
	}
	return fallback
}

// admission is what ensure-run decided inside the lock.
type admission struct {
	mode     string // NEW, RESUME, RERUN_FROM
	outcome  string // NEW, RESUME
	run      kintoneapi.Record
	key      DerivedKey
	noop     bool
	blocking []string
}

// executeRunNetwork is the admission sequence of §1.3.1 followed by the scheduler. A
// non-nil error with an empty out.Outcome is a rejection (REJECTED); with out.Outcome set
// the scheduler failed after the Invocation was created.
func (c *cli) executeRunNetwork(ctx context.Context, o runOptions) (runOutput, error) {
	var out runOutput
	out.RetryBrakeNodeIDs, out.BlockedRunIDs = []string{}, []string{}

	// 1. Definition and business key.
	n, profile, key, err := c.runDefinition(o)
	if err != nil {
		return out, err
	}
	kf, err := c.newKsqlFlow(o, profile)
	if err != nil {
		return out, err
	}
	st, err := c.newStore(true, time.Duration(n.LeaseSec)*time.Second)
	if err != nil {
		return out, err
	}

	// 2. Capabilities, before the lock.
	caps, err := kf.checkCapabilities(ctx, n)
	if err != nil {
		return out, err
	}

	pre, err := lookedUpBeforeLock(ctx, st, profile, n.NetworkID, o, key) // racedefects.go: two planted defects
	if err != nil {
		return out, err
	}

	// 3. Network lock, owned by this Invocation.
	invID := "invoke_" + uuid.NewString()
	lock, err := acquireLock(ctx, st, profile, n.NetworkID, invID, c.ownerInstance(),
		time.Duration(n.LeaseSec)*time.Second, time.Duration(n.HeartbeatSec)*time.Second, c.now)
	if err != nil {
		return out, err
	}
	// The lease monitor's timer starts with the scheduler (schedule), as the product's does:
	// admission renews nothing.
	st.lease = lock
	e := &execution{c: c, st: st, kf: kf, lock: lock, profile: profile, invID: invID, caps: caps, beforeLock: pre}

	// 4. Run lookup and outcome, inside the lock.
	adm, err := e.admit(ctx, n, o, key)
	if err != nil {
		// run_id stays the --resume-run value (or null) on a rejection; the Run that blocks
		// a NEW is reported in blocked_run_ids (§1.3).
		out.BlockedRunIDs = append(out.BlockedRunIDs, blockingOf(err)...)
		e.closeRejected(ctx, err)
		return out, err
	}
	if adm.noop {
		if rerr := lock.release(ctx, StatusSuccess, "ALREADY_SUCCESS"); rerr != nil {
			return out, rerr
		}
		out.Outcome, out.RunID = "NOOP", strp(adm.run.Str("run_id"))
		out.AggregateStatus = strp(StatusSuccess)
		out.InvocationResultCode = CodeNoopAlreadySuccess
		return out, nil
	}

	// 5. Schedule.
	out.Outcome, out.RunID, out.InvocationID = adm.outcome, strp(e.runID), strp(invID)
	// out is read after the call: the order of a return's operands is not specified.
	err = e.scheduleAndClose(ctx, &out)
	return out, err
}

// runDefinition loads and validates the network definition, reads the profile and derives
// the business key (none for --resume-run); nodes with CSV IO need KSQL_FLOWNET_IO_DIR.
func (c *cli) runDefinition(o runOptions) (n *Network, profile string, key DerivedKey, err error) {
	n, verrs := LoadNetwork(o.network)
	if len(verrs) > 0 {
		lines := make([]string, len(verrs))
		for i, e := range verrs {
			lines[i] = e.String()
		}
		return nil, "", DerivedKey{}, coded("NETWORK_VALIDATION_FAILED", "Network validation failed with %d error(s):\n%s", len(verrs), strings.Join(lines, "\n"))
	}
	env, err := c.requireEnv("KSQL_FLOWNET_PROFILE")
	if err != nil {
		return nil, "", key, err
	}
	profile = env["KSQL_FLOWNET_PROFILE"]
	if o.resumeRun == "" {
		key, err = DeriveBusinessKey(n, KeyInput{BusinessKey: o.businessKey, HasBusinessKey: o.hasBusinessKey,
			ScheduledFor: o.scheduledFor, HasScheduledFor: o.hasSched,
			Manual: !o.resume && !o.hasBusinessKey && !o.hasSched}, c.now())
		if err != nil {
			return nil, "", key, &codedError{Code: "BUSINESS_KEY_INVALID", Msg: fmt.Sprintf("%s: %s", errCode(err, "BUSINESS_KEY_INVALID"), err.Error()), Err: err}
		}
	}

	for _, nd := range n.Nodes {
		if len(nd.Inputs) > 0 || len(nd.Outputs) > 0 {
			if _, err := c.requireEnv("KSQL_FLOWNET_IO_DIR"); err != nil {
				return nil, "", key, err
			}
		}
	}
	return n, profile, key, nil
}

// scheduleAndClose runs the scheduler for an admitted Run and closes the Invocation with
// its outcome, which it adds to out.
func (e *execution) scheduleAndClose(ctx context.Context, out *runOutput) error {
	e.closeRunOnStop()
	e.closeInvocationOnStop()
	agg, status, code, serr := e.schedule(ctx)
	out.RetryBrakeNodeIDs = append(out.RetryBrakeNodeIDs, e.brakeNodes...)
	if serr != nil && errCode(serr, "") == codeLeaseInterruptedCode && e.finalWriteConfirmed {
		// A lease lost after a confirmed final write is an ordinary close (§1.3.2): the
		// Invocation ends CANCELLED / NETWORK_LEASE_INTERRUPTED and run-network reports the
		// persisted aggregate like any other finish. Only an unconfirmed loss is an error.
		status, code = StatusCancelled, codeLeaseInterruptedCode
		agg, serr = e.run.Str("status"), nil
	}
	if serr != nil {
		out.InvocationResultCode = CodeSchedulerFailed
		if errCode(serr, "") == codeLeaseInterruptedCode {
			out.InvocationResultCode = codeLeaseInterruptedCode
		}
		return e.closeFailed(ctx, serr)
	}
	if cerr := e.closeInvocation(ctx, status, code); cerr != nil {
		return cerr
	}
	out.AggregateStatus, out.InvocationResultCode = strp(agg), code
	return nil
}

const codeEnsureRunFailed = "ENSURE_RUN_FAILED"

func blockingOf(err error) []string {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.Blocking
	}
	return nil
}

func (c *cli) newKsqlFlow(o runOptions, profile string) (*ksqlFlow, error) {
	bin := firstNonEmpty(o.bin, c.getenv("KSQL_FLOW_BIN"))
	cfg := firstNonEmpty(o.config, c.getenv("KSQL_FLOW_CONFIG"))
	wd := firstNonEmpty(o.workdir, c.getenv("KSQL_FLOW_WORKDIR"))
	var missing []string
	for name, v := range map[string]string{"KSQL_FLOW_BIN": bin, "KSQL_FLOW_CONFIG": cfg, "KSQL_FLOW_WORKDIR": wd} {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, coded(codeConfigMissing, "required environment variable(s) not set: %s", strings.Join(missing, ", "))
	}
	args, err := parseBinArgs(c.getenv("KSQL_FLOW_BIN_ARGS"))
	if err != nil {
		return nil, coded(codeConfigMissing, "%v", err)
	}
	wd, err = filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("KSQL_FLOW_WORKDIR: %w", err)
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return nil, fmt.Errorf("create KSQL_FLOW_WORKDIR: %w", err)
	}
	return &ksqlFlow{bin: bin, args: args, config: cfg, workdir: wd, profile: profile, environ: c.environ, dir: c.childDir, grace: c.graceful()}, nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// findRun reads the NETWORK_RUN by run id or by R1 key (nil when there is none).
func (e *execution) findRun(ctx context.Context, byRunID, r1 string) (kintoneapi.Record, error) {
	if byRunID != "" {
		return findRunByID(ctx, e.st, byRunID)
	}
	return e.st.findOne(ctx, e.st.stateApp, "record_key in ("+q(r1)+")", func(n int) error {
		return coded("MULTIPLE_RUNS", "%d NETWORK_RUN records match", n)
	})
}

// holdState reads the Run's CANCEL_REQUEST hold state ("" when none).
func (e *execution) holdState(ctx context.Context, runID string) (string, kintoneapi.Record, error) {
	rec, err := e.st.byKey(ctx, e.st.stateApp, "CANCEL:"+runID)
	if err != nil || rec == nil {
		return "", nil, err
	}
	var h map[string]any
	_ = json.Unmarshal([]byte(rec.Str("status_reason")), &h)
	s, _ := h["state"].(string)
	return s, rec, nil
}

func (e *execution) admit(ctx context.Context, wc *Network, o runOptions, key DerivedKey) (*admission, error) {
	e.wc = wc
	adm := &admission{key: key}
	r1 := ""
	if o.resumeRun == "" {
		var err error
		if r1, err = R1Key(e.profile, wc.NetworkID, key.BusinessKey); err != nil {
			return adm, &codedError{Code: "BUSINESS_KEY_INVALID", Msg: err.Error(), Err: err}
		}
	}
	var run kintoneapi.Record
	if !e.beforeLock.noRun { // planted defect start-trusts-lookup-before-lock: the lookup before the lock stands
		var err error
		if run, err = e.findRun(ctx, o.resumeRun, r1); err != nil {
			return adm, err
		}
	}
	adm.run = run
	if run == nil {
		switch {
		case o.resumeRun != "":
			return adm, coded("RUN_NOT_FOUND", "no Run with run_id %s", o.resumeRun)
		case o.rerunFrom != "":
			return adm, coded("RUN_NOT_FOUND", "--rerun-from needs an existing Run for business key %s", key.BusinessKey)
		}
		if err := e.checkActiveRuns(ctx, wc, r1); err != nil {
			return adm, err
		}
		adm.mode, adm.outcome = "NEW", "NEW"
		return adm, e.prepareNew(ctx, wc, key, r1)
	}
	if run.Str("network_id") != wc.NetworkID || runProfile(run) != e.profile {
		return adm, coded("RUN_ID_MISMATCH", "Run %s belongs to network %s / profile %s", run.Str("run_id"), run.Str("network_id"), runProfile(run))
	}
	e.runID = run.Str("run_id")
	if run.Str("status") == StatusSuccess {
		if o.rerunFrom != "" {
			return adm, coded("RERUN_FROM_SUCCESS_RUN", "Run %s is SUCCESS and final; start a correction run with a different business key instead", e.runID)
		}
		adm.noop = true
		return adm, nil
	}
	if !o.resume && o.resumeRun == "" {
		return adm, &codedError{Code: "RUN_ALREADY_EXISTS", Msg: fmt.Sprintf("an unfinished Run %s exists for business key %s; use --resume to continue it", e.runID, run.Str("business_key")), Blocking: []string{e.runID}}
	}
	hold, _, err := e.holdState(ctx, e.runID)
	if err != nil {
		return adm, err
	}
	if hold == "REQUESTED" || hold == "ACCEPTED" {
		return adm, coded("RUN_ON_HOLD", "Run %s is on hold (%s); release it first", e.runID, hold)
	}
	adm.mode, adm.outcome = "RESUME", "RESUME"
	if o.rerunFrom != "" {
		adm.mode = "RERUN_FROM"
	} else if !hasInputs(wc) {
		// As the real FlowNet: a plain resume of a network without CSV inputs records its
		// Invocation before the remaining checks, so a refusal from here on (not resumable,
		// profile or bundle mismatch) closes that Invocation FAILED with its code.
		e.mode = "RESUME"
		if err := e.createResumeInvocationFromStates(ctx); err != nil {
			return adm, err
		}
	}
	// Planted defects: an archived Run is resumed; the lifecycle was checked before the lock only.
	archived := run.Str("lifecycle_status") == "ARCHIVED" && !defect.ArchivedRunResumable && !e.beforeLock.archivedChecked
	if archived || run.Str("resume_allowed") == "false" {
		return adm, coded("RUN_NOT_RESUMABLE", "Run %s is not resumable (lifecycle_status=%s, resume_allowed=%s)", e.runID, run.Str("lifecycle_status"), run.Str("resume_allowed"))
	}
	return adm, e.prepareResume(ctx, run, adm.mode, o.rerunFrom)
}

// checkActiveRuns enforces max_active_runs over the other business keys' resumable Runs.
func (e *execution) checkActiveRuns(ctx context.Context, n *Network, r1 string) error {
	runs, err := e.st.findExact(ctx, e.st.stateApp, `record_type in ("NETWORK_RUN") and network_id in (`+q(n.NetworkID)+`)`, "network_id", n.NetworkID)
	if err != nil {
		return err
	}
	var active []string
	for _, r := range runs {
		if r.Str("record_key") == r1 || runProfile(r) != e.profile {
			continue
		}
		if r.Str("resume_allowed") == "true" && r.Str("lifecycle_status") != "ARCHIVED" && r.Str("status") != StatusSuccess {
			active = append(active, r.Str("run_id"))
		}
	}
	if len(active) >= n.MaxActiveRuns {
		sort.Strings(active)
		return &codedError{Code: "MAX_ACTIVE_RUNS", Msg: fmt.Sprintf("%d active Run(s) already exist for network %s (max_active_runs %d)", len(active), n.NetworkID, n.MaxActiveRuns), Blocking: active}
	}
	return nil
}

// prepareNew follows the NEW write order: upload bundle → INSERT Run (the R1 key is the
// commit point) → Invocation → re-read Run, download and verify the bundle → Node States.
func (e *execution) prepareNew(ctx context.Context, wc *Network, key DerivedKey, r1 string) error {
	prof, err := e.kf.describeProfile(ctx)
	if err != nil {
		return err
	}
	if err := e.kf.inspectJobs(ctx, wc, wc.SQLPath); err != nil {
		return err
	}
	zipData, err := buildBundle(wc)
	if err != nil {
		return err
	}
	fileKey, err := e.st.kc.UploadFile(ctx, e.st.stateApp, "execution-bundle.zip", "application/zip", zipData)
	if err != nil {
		return &codedError{Code: "BUNDLE_UPLOAD_FAILED", Msg: "upload execution bundle: " + err.Error(), Err: err}
	}
	snap, _ := canonicalJSON(prof.Summary)
	e.runID = "netrun_" + uuid.NewString()
	now := e.c.now()
	rec := vals(map[string]any{
		"record_type": "NETWORK_RUN", "run_id": e.runID, "network_id": wc.NetworkID, "business_key": key.BusinessKey,
		"status": StatusCreated, "lifecycle_status": "ACTIVE", "resume_allowed": "true",
		"definition_sha256": wc.DefinitionSHA256(), "source_bundle_sha256": sha256Hex(zipData),
		"resolved_profile_sha256": prof.SHA256, "resolved_profile_snapshot": string(snap),
		"ksql_flow_version": e.caps.KsqlFlowVersion, "engine_version": e.caps.EngineVersion,
		"source_bundle_attachment": []map[string]string{{"fileKey": fileKey}},
		"created_at":               isoMillis(now), "updated_at": isoMillis(now),
		"max_active_runs": wc.MaxActiveRuns, "definition_schema_version": wc.SchemaVersion, "dialect": 1,
	})
	if key.AsOf != nil {
		rec["as_of"] = kintoneapi.Field{Value: isoMillis(*key.AsOf)}
	}
	// The R1 unique key is the final arbiter of one Run per key (§1.3.1). The store adjudicates
	// a CB_VA01 or a lost response by re-reading the key: ours is success; anything else is
	// the repository's DUPLICATE_RECORD (§2.6), reported as such. Decision: not folded into
	// RUN_ALREADY_EXISTS — that code is the lookup's verdict with the blocking run ids, while
	// here no Run of ours exists and the other writer's may not be readable yet; the article's
	// fact table (m3-run-uniqueness) has the loser of two createRun() report DUPLICATE_RECORD.
	if _, _, err := e.st.insert(ctx, e.st.stateApp, r1, rec, "run_id"); err != nil {
		if !defect.RunInsertLoserRetries || errCode(err, "") != codeDuplicateRecord {
			return err
		}
		// planted defect: the loser "retries" under a key of its own and creates a second Run
		if _, _, err := e.st.insert(ctx, e.st.stateApp, r1+":retry", rec, "run_id"); err != nil {
			return err
		}
	}
	e.mode = "NEW"
	ids := make([]string, len(wc.Nodes))
	for i, nd := range wc.Nodes {
		ids[i] = nd.ID
	}
	if err := e.createInvocation(ctx, "new business run", ids, []string{}, []string{}); err != nil {
		return err
	}
	run, err := e.findRun(ctx, e.runID, "")
	if err != nil {
		return err
	}
	if run == nil {
		return coded(codeRecordNotFound, "Run %s vanished after creation", e.runID)
	}
	return e.loadRun(ctx, run, true)
}

// prepareResume re-checks the profile, verifies and extracts the stored bundle, completes a
// partially created Run, applies the --rerun-from checks and creates the Invocation.
func (e *execution) prepareResume(ctx context.Context, run kintoneapi.Record, mode, rerunFrom string) error {
	prof, err := e.kf.describeProfile(ctx)
	if err != nil {
		return err
	}
	if prof.SHA256 != run.Str("resolved_profile_sha256") {
		return coded("PROFILE_SNAPSHOT_MISMATCH", "kSQL-Flow profile %s changed since Run %s was created", e.profile, e.runID)
	}
	e.mode = mode
	if err := e.loadRun(ctx, run, false); err != nil {
		return err
	}
	if err := e.reconcileAggregate(ctx); err != nil { // reconcile.go
		return err
	}
	var selected map[string]bool
	if mode == "RERUN_FROM" {
		if e.net.Node(rerunFrom) == nil {
			return coded("RERUN_FROM_NODE_NOT_FOUND", "node %s is not in the Run's network", rerunFrom)
		}
		selected = e.net.Descendants(rerunFrom)
		for id := range selected {
			ns := e.states[id]
			if ns == nil {
				return coded("RERUN_FROM_DAG_INVALID", "Run %s has no Node State for %s", e.runID, id)
			}
			if ns.status == StatusUnknown {
				return coded("RERUN_FROM_UNKNOWN_STATE", "node %s is UNKNOWN; resolve it before --rerun-from", id)
			}
			if defect.RerunFromIgnoresNonIdempotent {
				continue
			}
			if !ns.node.Idempotent && (ns.latestNo > 0 || defect.RerunFromRefusesUnexecuted) {
				return coded("RERUN_FROM_NON_IDEMPOTENT", "--rerun-from %s selects node %s, executed idempotent=false (latest_attempt_no %d); resolve it instead", rerunFrom, id, ns.latestNo)
			}
		}
		e.rerunSet = selected
	}
	if e.invRecID != "" {
		return nil // created before the checks (admit)
	}
	var sel, pres, blocked []string
	if mode == "RERUN_FROM" {
		// The selection only, in definition order: the real FlowNet records no preserved or
		// blocked nodes for a --rerun-from until its close.
		for _, id := range e.order {
			if selected[id] {
				sel = append(sel, id)
			}
		}
	} else {
		sel, pres, blocked = resumeSets(e.order, func(id string) (string, bool) {
			ns := e.states[id]
			return ns.status, ns.node.Idempotent
		})
	}
	reason := "resume incomplete run"
	if mode == "RERUN_FROM" {
		reason = "rerun from " + rerunFrom
	}
	if err := e.checkInputBaselines(ctx, sel); err != nil { // io.go: before the Invocation exists
		return err
	}
	return e.createInvocation(ctx, reason, nonNil(sel), nonNil(pres), nonNil(blocked))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// loadRun downloads and verifies the Run's bundle, extracts it under the work dir and loads
// (creating the missing ones) the Node States.
func (e *execution) loadRun(ctx context.Context, run kintoneapi.Record, fresh bool) error {
	e.run, e.runRev = run, run.Revision()
	e.runID = run.Str("run_id")
	fk := fileKeyOf(run["source_bundle_attachment"].Value)
	if fk == "" {
		return coded("BUNDLE_MANIFEST_INVALID", "Run %s has no execution bundle attachment", e.runID)
	}
	data, err := e.st.kc.DownloadFile(ctx, e.st.stateApp, fk)
	if err != nil {
		return wrapRemote("download execution bundle", err)
	}
	dir := filepath.Join(e.kf.workdir, "bundles", e.runID, run.Str("source_bundle_sha256"))
	ob, err := openBundle(data, run.Str("source_bundle_sha256"), dir)
	if err != nil {
		return err
	}
	e.net, e.sql = ob.Network, ob.SQL
	if defect.ResumeExecutesWorkingCopy && !fresh && e.wc != nil {
		for _, nd := range e.wc.Nodes {
			e.sql[nd.ID] = e.wc.SQLPath(nd)
		}
	}
	e.order, _ = TopoOrder(e.net.Nodes)
	e.asOf = run.Str("as_of")
	if e.asOf == "" {
		e.asOf = run.Str("created_at")
	}
	return e.loadStates(ctx)
}

func fileKeyOf(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[0].(map[string]any)
	if k, _ := m["fileKey"].(string); k != "" {
		return k
	}
	k, _ := m["name"].(string)
	return k
}

// closeRejected releases the lock after an admission rejection; an Invocation that was
// already created is finalised FAILED with the rejection code. The lock tombstone says
// FAILED / ENSURE_RUN_FAILED whatever the rejection was (§1.3.1): the specific code lives on
// the Invocation and in the command's output, the lock only records that ensure-run failed.
func (e *execution) closeRejected(ctx context.Context, cause error) {
	code := errCode(cause, codeEnsureRunFailed)
	if e.invRecID != "" {
		_ = e.finishInvocation(ctx, StatusFailed, code)
	}
	if err := e.lock.release(ctx, StatusFailed, codeEnsureRunFailed); err != nil {
		fmt.Fprintf(e.c.stderr, "Warning [%s]: network lock release failed: %v\n", errCode(err, codeLockUnavailable), err)
	}
}

// closeInvocation finalises the Invocation and releases the lock with its status and code.
func (e *execution) closeInvocation(ctx context.Context, status, code string) error {
	if err := e.finishInvocation(ctx, status, code); err != nil {
		e.lock.stopHeartbeat()
		return err
	}
	return e.lock.release(ctx, status, code)
}

// closeFailed handles a scheduler error: an unconfirmed lease loss leaves the Invocation
// untouched (a confirmed one never gets here: it is an ordinary close); anything else closes
// it FAILED/SCHEDULER_FAILED.
func (e *execution) closeFailed(ctx context.Context, serr error) error {
	if errCode(serr, "") == codeLeaseInterruptedCode {
		e.lock.stopHeartbeat()
		return serr
	}
	code, status := CodeSchedulerFailed, StatusFailed
	if err := e.finishInvocation(ctx, status, code); err != nil {
		e.lock.stopHeartbeat()
		return fmt.Errorf("%w (and the Invocation could not be finalised: %v)", serr, err)
	}
	if err := e.lock.release(ctx, status, code); err != nil {
		return fmt.Errorf("%w (and the network lock release failed: %v)", serr, err)
	}
	return serr
}
