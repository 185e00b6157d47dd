// Package record is the schema of what leaves a flowtest run: the record of one scenario,
// run.json and gate.json as Go types. It is the one definition the harness fills (a process,
// a traffic line, a barrier arrival, a fault firing) and the archive writes, reads and
// renders, so a new evidence field is added here once.
//
// The JSON layout is versioned by SchemaVersion and documented in ../schema/*.schema.json and
// ../README.md.
package record

import (
	"time"
)

// SchemaVersion is written as schema_version into every scenario file and run.json. Bump it
// on any incompatible change (renamed/removed field, changed meaning, an optional field made
// required) and change the schemas' schema_version const with it; adding optional fields
// does not require a bump. Readers refuse files with a newer version than they know.
const SchemaVersion = 1

// Scenario statuses. Only passed is a pass. Blocked and interrupted are their own statuses,
// never counted as failed nor as passed: blocked means a precondition of the scenario was not
// met (a step reported it with scenario.Blocked, e.g. a pending request in the request app),
// so the scenario says nothing about the SUT; interrupted means the run was interrupted
// (Ctrl-C) while the scenario was running. A scenario the run never reached is not-run.
const (
	StatusPassed      = "passed"
	StatusFailed      = "failed"
	StatusBlocked     = "blocked"
	StatusInterrupted = "interrupted"
	StatusNotRun      = "not-run"
)

// Why a scenario was not run (ScenarioSummary.NotRunCategory).
const (
	// NotRunTag: the selection left it out (the tag expression, --rerun, another shard of
	// --shard): not selected, as opposed to selected but not run (ScenarioSummary.NotSelected).
	NotRunTag            = "tag"
	NotRunPlatform       = "platform"        // needs another OS (e.g. @windows on Linux)
	NotRunNotImplemented = "not-implemented" // undefined/pending steps
	NotRunInterrupted    = "interrupted"     // the run stopped before reaching it
)

// Run states.
const (
	RunComplete    = "complete"
	RunInterrupted = "interrupted"
)

// TailLimit is the most bytes of a child's stdout or stderr kept in a scenario file.
const TailLimit = 8 << 10

// Scenario is the record of one scenario, written as soon as the scenario ends.
type Scenario struct {
	SchemaVersion int    `json:"schema_version"`
	ID            string `json:"id"`
	Name          string `json:"name,omitempty"` // scenario title from the feature file
	Feature       string `json:"feature"`        // feature name
	FeatureFile   string `json:"feature_file,omitempty"`
	Line          int    `json:"line,omitempty"`
	Series        string `json:"series"`
	// Extended: one of flowtest's extended scenarios, not of the 43 acceptance scenarios.
	Extended bool     `json:"extended,omitempty"`
	Tags     []string `json:"tags"`
	Status   string   `json:"status"` // passed|failed|blocked|interrupted|not-run
	// Reason says why a scenario was not run, or summarises a failure. It is the runner's
	// own text; the JSON name is status_reason so that `reason` keys can be treated as
	// request reason bodies (never stored) everywhere.
	Reason string `json:"status_reason,omitempty"`
	// KnownDefect is the known product defect (features/known-defects.yaml) that applied to
	// the scenario in this run (the real product's package and version): whether the
	// scenario reproduced it (still failed), no longer reproduces it (passed, flagged), or
	// failed otherwise (an ordinary failure). Absent when no entry applied.
	KnownDefect *KnownDefectMark `json:"known_defect,omitempty"`
	Start       time.Time        `json:"start"`
	End         time.Time        `json:"end"`
	DurationMS  int64            `json:"duration_ms"`
	// SetupMS is the runner's own cost before the scenario's first step: from Start to the
	// first step's start (the scene: work dir, emulator, scope, fixtures). Absent when no step
	// started.
	SetupMS    *int64           `json:"setup_ms,omitempty"`
	Steps      []Step           `json:"steps"`
	Assertions []Assertion      `json:"assertions"`
	Processes  []Process        `json:"processes"`
	Barriers   []BarrierArrival `json:"barriers"`
	// Faults are the requests the selective faults of the scenario's fault proxies took
	// (which fault, which request, what it did, when); absent when no fault fired.
	Faults []FaultFiring `json:"faults,omitempty"`
	// Waits are the bounded waits the steps made (internal/harness/wait), in the order they ended.
	Waits []Wait `json:"waits"`
	// Notes is evidence that is not an assertion: what a trial observed, what an
	// inspection printed.
	Notes []Note `json:"notes,omitempty"`
	// Attempts are the NODE_ATTEMPT records the scenario's runs left, read just before the
	// cleanup deleted them (for the timeline of index.html); absent when none were read.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Differential is the scenario's normalised record history and process outputs, read
	// just before the cleanup, for `flowtest archive diff` (real vs reference FlowNet).
	Differential *Differential  `json:"differential,omitempty"`
	Traffic      map[string]int `json:"traffic"`
	// TrafficLog is every kintone request that passed a fault proxy of the scenario (method,
	// path, app, record id, field names, status, time; never a query string, header, body
	// or token), per proxy in the order the requests ended.
	TrafficLog []TrafficLine `json:"traffic_log,omitempty"`
	// APIRequests are the kintone REST requests sent for the scenario, by app role: the
	// harness's own reads and writes (its cleanup too) and what passed its proxies.
	APIRequests APIRequests `json:"api_requests,omitempty"`
	Cleanup     Cleanup     `json:"cleanup"`
}

// APIRequests are kintone REST requests by app role ("state", "audit", …; "other" for a
// request naming no app of the target). kintone budgets requests per app and day.
type APIRequests map[string]AppRequests

// AppRequests are one app's requests.
type AppRequests struct {
	Requests int64            `json:"requests"`
	ByMethod map[string]int64 `json:"by_method"`
	// ByOrigin says who sent them: "harness" (flowtest's own clients), "flownet" (through
	// FlowNet's proxies), "ksql-flow" (through the scenario's kSQL-Flow proxy).
	ByOrigin map[string]int64 `json:"by_origin,omitempty"`
	// Throttled were answered 429 (and sent again after a backoff; each send counts).
	Throttled int64 `json:"throttled,omitempty"`
}

// Plus is the sum of a and b (nil when both hold nothing).
func (a APIRequests) Plus(b APIRequests) APIRequests {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := APIRequests{}
	for _, src := range []APIRequests{a, b} {
		for app, c := range src {
			acc := out[app]
			if acc.ByMethod == nil {
				acc.ByMethod = map[string]int64{}
			}
			acc.Requests += c.Requests
			acc.Throttled += c.Throttled
			for m, n := range c.ByMethod {
				acc.ByMethod[m] += n
			}
			for o, n := range c.ByOrigin {
				if acc.ByOrigin == nil {
					acc.ByOrigin = map[string]int64{}
				}
				acc.ByOrigin[o] += n
			}
			out[app] = acc
		}
	}
	return out
}

// Total is the number of requests on every app.
func (a APIRequests) Total() int64 {
	var n int64
	for _, c := range a {
		n += c.Requests
	}
	return n
}

// TrafficLine is one request through a fault proxy (internal/harness/faultproxy's traffic log).
type TrafficLine struct {
	Process   string    `json:"process"`
	At        time.Time `json:"at"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	App       string    `json:"app,omitempty"`
	RecordID  string    `json:"record_id,omitempty"`
	RecordKey string    `json:"record_key,omitempty"` // the updateKey value of a PUT by updateKey
	Fields    []string  `json:"fields,omitempty"`
	Blocked   bool      `json:"blocked,omitempty"`
	Heartbeat bool      `json:"heartbeat,omitempty"`
	// Fenced: a PUT or DELETE carried kintone's revision fence (nil for reads and POSTs).
	Fenced     *bool   `json:"fenced,omitempty"`
	Status     int     `json:"status,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
}

// Step is one executed (or skipped) Gherkin step.
type Step struct {
	Text       string `json:"text"`
	Keyword    string `json:"keyword"`
	Status     string `json:"status"` // passed|failed|skipped|undefined|pending
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Line       int    `json:"line,omitempty"` // the step's line in its feature file
	// Start is when the step started (absent in records written before it was recorded).
	Start time.Time `json:"start,omitzero"`
	// Match is the step definition the step's text matched (absent when none did, or in
	// records written before it was recorded).
	Match *StepMatch `json:"match,omitempty"`
}

// StepMatch is the step definition a step ran: its handler's source position, as `flowtest
// steps` names it ("internal/steps/kit/runs.go:42"), and its regular expression.
type StepMatch struct {
	Location string `json:"location"`
	Pattern  string `json:"pattern,omitempty"`
}

// Assertion is one check a step made: what was expected and what was seen.
type Assertion struct {
	What     string `json:"what"`
	Expected string `json:"expected"`
	Seen     string `json:"seen"`
	OK       bool   `json:"ok"`
}

// Note is one piece of evidence a step recorded without asserting on it.
type Note struct {
	What   string `json:"what"`
	Detail string `json:"detail"`
}

// Process is a child process the scenario started.
type Process struct {
	Name     string   `json:"name"`
	Argv     []string `json:"argv"`
	ExitCode *int     `json:"exit_code"` // null when killed by a signal or never reaped
	Signal   string   `json:"signal,omitempty"`
	// Start is when the harness started the process (absent in older records); it ended
	// DurationMS later, or was still running when the record was written.
	Start      time.Time `json:"start,omitzero"`
	DurationMS int64     `json:"duration_ms"`
	StdoutTail string    `json:"stdout_tail"` // redacted, at most TailLimit bytes
	StderrTail string    `json:"stderr_tail"`
	// OutputSummarized: the tails hold only a summary of the output (the lines reduced to
	// their codes: "Error [CODE]", "Warning [CODE]", kintone error codes, Go runtime failure
	// headers, the poller's counters, JSON result codes), never its body; StdoutPresent and
	// StderrPresent say whether there was any output at all. Set for series whose records
	// must hold summaries only (P2-16).
	OutputSummarized bool  `json:"output_summarized,omitempty"`
	StdoutPresent    *bool `json:"stdout_present,omitempty"`
	StderrPresent    *bool `json:"stderr_present,omitempty"`
}

// Wait outcomes.
const (
	WaitReached  = "reached"
	WaitTimedOut = "timed-out"
	WaitGaveUp   = "gave-up" // the step's context ended first, or the condition reported a permanent error
)

// Wait is one bounded wait of a step: what it awaited, its limit, how long it took and how it
// ended, so a slow or failed scenario shows where its time went.
type Wait struct {
	Name            string `json:"name,omitempty"` // the named limit (e.g. RunStatus); empty for an explicit bound
	What            string `json:"what"`
	LimitMS         int64  `json:"limit_ms"` // the bound used, after FLOWTEST_TIMEOUT_SCALE
	ElapsedMS       int64  `json:"elapsed_ms"`
	Outcome         string `json:"outcome"` // reached|timed-out|gave-up
	Checks          int    `json:"checks"`
	LastObservation string `json:"last_observation,omitempty"`
	LastError       string `json:"last_error,omitempty"`
	// Start is when the wait began (its end minus ElapsedMS; absent in older records).
	Start time.Time `json:"start,omitzero"`
}

// Attempt is one NODE_ATTEMPT record of a run the scenario made, as FlowNet wrote it. Its
// times are kintone DATETIME values, which keep whole minutes only: StartedAt and FinishedAt
// say in which minute the attempt started and finished, DurationSec how long it ran.
type Attempt struct {
	Node         string    `json:"node"`
	AttemptNo    int       `json:"attempt_no"`
	Status       string    `json:"status"`
	ResultCode   string    `json:"result_code,omitempty"`
	InvocationID string    `json:"invocation_id,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	DurationSec  float64   `json:"duration_sec,omitempty"`
	// Result is what kSQL-Flow's own Execution Result file of the attempt says of its times,
	// to the millisecond (the file FlowNet has kSQL-Flow write per attempt, matched by the
	// attempt id it echoes); nil when the scenario left no such file for the attempt.
	Result *AttemptResult `json:"result,omitempty"`
}

// AttemptResult is the times an Execution Result file gives an attempt (product-contract §7:
// startedAt, finishedAt, durationMs).
type AttemptResult struct {
	// StartedAt is absent when kSQL-Flow did not start executing (its startedAt is null).
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
}

// BarrierArrival is one arrival at a fault-proxy barrier.
type BarrierArrival struct {
	ID string `json:"id"`
	// Name is the barrier's name in the feature (`barrier "long read" …`) and Process the
	// process whose fault proxy holds it: what a reader of the timeline knows it by (ID is
	// scope-prefixed and unique only). Absent in older records.
	Name    string    `json:"name,omitempty"`
	Process string    `json:"process,omitempty"`
	Phase   string    `json:"phase"`
	Method  string    `json:"method"`
	Path    string    `json:"path"`
	Status  int       `json:"status"`
	At      time.Time `json:"at"`
	// ReleasedAt is when the held request was let go (absent when not recorded): the hold
	// is At..ReleasedAt.
	ReleasedAt time.Time `json:"released_at,omitzero"`
}

// FaultFiring is one request a selective fault of a fault proxy took (internal/harness/faultproxy's
// Firing), named as the feature names it.
type FaultFiring struct {
	// Fault is the fault's name in the feature (`fault "<name>" …`), Process the process
	// whose fault proxy holds it.
	Fault   string `json:"fault"`
	Process string `json:"process"`
	// Action is respond | lose-response | reset | delay.
	Action string `json:"action"`
	// Match is which matching request this was (1-based, counted per fault).
	Match  int    `json:"match"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// App is the role of the app the request addressed (state, audit, request), never its id.
	App       string `json:"app,omitempty"`
	RecordID  string `json:"record_id,omitempty"`
	RecordKey string `json:"record_key,omitempty"` // the updateKey value of a PUT by updateKey
	// Status is the status sent (respond) or the upstream's status (lose-response).
	Status int `json:"status,omitempty"`
	// Error says why the fault took the request but could not act.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

// Cleanup is the outcome of the After hook. A failed cleanup fails the scenario.
type Cleanup struct {
	OK      bool     `json:"ok"`
	Actions []string `json:"actions"`
	Error   string   `json:"error,omitempty"`
}

// Run is run.json: the whole run.
type Run struct {
	SchemaVersion int    `json:"schema_version"`
	RunnerVersion string `json:"runner_version"`
	// Flowtest is the build of flowtest that made the run, so a record names the runner's
	// commit and not only its version string; nil in records from before it was recorded.
	Flowtest *FlowtestBuild `json:"flowtest,omitempty"`
	// FeaturesDigest is "sha256:<hex>" over the suite's files the run read (features,
	// manifest, fixtures): two records with the same digest ran the same scenarios' text.
	FeaturesDigest string      `json:"features_digest,omitempty"`
	Target         string      `json:"target"`
	Profile        string      `json:"profile"`
	SUT            SUTIdentity `json:"sut"`
	// Product is which kSQL-FlowNet the scenarios drove: the real product (a pinned npm
	// package or a checkout by path) or flowtest's reference model. A sandbox run of the
	// reference tested flowtest's model, not the product, and every reader must be able to tell.
	Product       *Product `json:"product,omitempty"`
	OS            string   `json:"os"`
	TagExpression string   `json:"tag_expression"`
	Label         string   `json:"label,omitempty"`
	// Environment holds further facts for the acceptance record (e.g. "base_url",
	// "apps": "state, audit, request, log"). Values are redacted like everything else.
	Environment map[string]string `json:"environment,omitempty"`
	RunOrder    []string          `json:"run_order"`
	Scenarios   []ScenarioSummary `json:"scenarios"`
	Totals      Totals            `json:"totals"`
	State       string            `json:"state"` // complete|interrupted
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	Evidence    []EvidenceRow     `json:"evidence"`
	// Command is the flowtest command line that made the run (redacted like argv).
	Command []string `json:"command,omitempty"`
	// ExitCode is the run's outcome code as the runner decided it when the run ended (before
	// the archive's own leak re-scan, which can only turn it into 1).
	ExitCode *int `json:"exit_code,omitempty"`
	// Gate names the gate record of a `flowtest gate run` (gate.json).
	Gate *GateRef `json:"gate,omitempty"`
	// Runner is what the run cost flowtest itself, so that a regression of the runner shows.
	Runner *RunnerCost `json:"runner,omitempty"`
	// APIRequests are every kintone REST request of the run by app role: its scenarios'
	// and the runner's own outside them (the live preflight's probes and reads).
	APIRequests APIRequests `json:"api_requests,omitempty"`
	// APIBudget is the per-app budget a live run was checked against before it started.
	APIBudget *APIBudget `json:"api_budget,omitempty"`
}

// FlowtestBuild is the flowtest binary that made a run: its version and the commit it was
// built from ("" when it was built outside a git checkout), and whether that checkout had
// uncommitted changes.
type FlowtestBuild struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// APIBudget is the check a live run passed before it started: the budget per app and the
// estimate of each app's requests, and where the estimate came from.
type APIBudget struct {
	PerApp int64 `json:"per_app"`
	// Basis says where the estimate came from: an earlier archive's folder name, or the
	// per-scenario default times the scenario count.
	Basis    string           `json:"basis"`
	Estimate map[string]int64 `json:"estimate"`
}

// RunnerCost is the runner's own cost over a run: its CPU time (its process alone, not its
// children's) and the scenarios' setup times (Scenario.SetupMS).
type RunnerCost struct {
	WallMS     int64 `json:"wall_ms"`
	CPUMS      int64 `json:"cpu_ms"`
	SetupP50MS int64 `json:"setup_p50_ms"`
	SetupP95MS int64 `json:"setup_p95_ms"`
	SetupMaxMS int64 `json:"setup_max_ms"`
	// SlowestSetups are the (at most 3) scenarios with the longest setups, longest first.
	SlowestSetups []ScenarioTime `json:"slowest_setups,omitempty"`
}

// ScenarioTime is a scenario id with a time in milliseconds.
type ScenarioTime struct {
	ID string `json:"id"`
	MS int64  `json:"ms"`
}

// GateRef is run.json's pointer to the gate record.
type GateRef struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	File    string `json:"file"`
}

// SUTIdentity is what the system under test says it is.
type SUTIdentity struct {
	Commit       string            `json:"commit,omitempty"`
	CommitSource string            `json:"commit_source,omitempty"` // "flag" (--sut-commit) | "checkout" | ""
	Branch       string            `json:"branch,omitempty"`
	Dirty        bool              `json:"dirty,omitempty"`
	Versions     map[string]string `json:"versions,omitempty"` // component -> version it reports
}

// Product names the kSQL-FlowNet a run drove.
type Product struct {
	// Kind is "real" (the published product or a build of it) or "reference" (flowtest's Go
	// model in the sandbox, which exists to be broken on purpose).
	Kind string `json:"kind"`
	// Source says where the real product came from: "pinned" (tools/flownet's lock file) or
	// "path" (a checkout or package given by path); "sandbox" for the reference.
	Source string `json:"source"`
	// Package and Version are what the product's package.json says ("" for the reference).
	Package string `json:"package,omitempty"`
	Version string `json:"version,omitempty"`
	// Node is the version of the Node.js that ran it (real only).
	Node string `json:"node,omitempty"`
}

// Label is the product in a few words for the console, the record and the HTML banner.
func (p *Product) Label() string {
	switch {
	case p == nil:
		return "unknown product"
	case p.Kind == ProductReference:
		return "reference FlowNet (flowtest's model, not the product)"
	default:
		l := p.Package
		if l == "" {
			l = "kSQL-FlowNet"
		}
		if p.Version != "" {
			l += "@" + p.Version
		}
		l += " (" + p.Source
		if p.Node != "" {
			l += ", node " + p.Node
		}
		return l + ")"
	}
}

// Product kinds.
const (
	ProductReal      = "real"
	ProductReference = "reference"
)

// ScenarioSummary is one row of run.json's scenario list.
type ScenarioSummary struct {
	ID       string   `json:"id"`
	Name     string   `json:"name,omitempty"`
	Feature  string   `json:"feature"`
	Series   string   `json:"series"`
	Extended bool     `json:"extended,omitempty"`
	Tags     []string `json:"tags"`
	Status   string   `json:"status"`
	Reason   string   `json:"status_reason,omitempty"`
	// KnownDefect is the record's known-defect mark (Scenario.KnownDefect).
	KnownDefect    *KnownDefectMark `json:"known_defect,omitempty"`
	NotRunCategory string           `json:"not_run_category,omitempty"` // tag|platform|not-implemented|interrupted
	DurationMS     int64            `json:"duration_ms"`
	SetupMS        *int64           `json:"setup_ms,omitempty"`
	File           string           `json:"file,omitempty"` // scenario file, relative to the archive
}

// NotSelected reports whether the run's selection left the scenario out: it was never meant
// to run, so the record and the CI outputs count it in one line instead of listing it. A
// selected scenario that could not run (blocked, not implemented, another platform) is not
// this.
func (s ScenarioSummary) NotSelected() bool {
	return s.Status == StatusNotRun && s.NotRunCategory == NotRunTag
}

// Totals counts scenarios by status.
type Totals struct {
	Total       int `json:"total"`
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Blocked     int `json:"blocked"`
	Interrupted int `json:"interrupted"`
	NotRun      int `json:"not_run"`
	// NotSelected counts the not-run scenarios (of NotRun) the selection left out
	// (ScenarioSummary.NotSelected); NotRun-NotSelected were selected and not run.
	NotSelected int   `json:"not_selected,omitempty"`
	DurationMS  int64 `json:"duration_ms"`
	// Extended counts the scenarios of the total that are extended, not acceptance, ones.
	Extended int `json:"extended,omitempty"`
	// KnownDefects counts the failed scenarios (of Failed) that failed by the declared
	// assertion of a known product defect applying to the run's product: still failures,
	// but not ones that make the run's exit code 1.
	KnownDefects int `json:"known_defects,omitempty"`
	// KnownDefectsNotReproduced counts the passed scenarios (of Passed) whose applying known
	// defect no longer reproduces: the catalogue needs updating, and the run exits 1.
	KnownDefectsNotReproduced int `json:"known_defects_not_reproduced,omitempty"`
}

// EvidenceRow is one line of the acceptance record's evidence table.
type EvidenceRow struct {
	Criterion   string   `json:"criterion"`
	Environment string   `json:"environment"`
	Result      string   `json:"result"`
	Limits      string   `json:"limits"`
	Scenarios   []string `json:"scenarios,omitempty"`
}

// ReasonOtherShardPrefix starts the not-run reason of a scenario that `run --shard K/N` left
// to another shard ("in another shard: 2/3"). Its not-run category is NotRunTag: like a tag
// filter, it is a selection, and `archive merge` replaces it with the record of the shard
// that ran the scenario.
const ReasonOtherShardPrefix = "in another shard"
