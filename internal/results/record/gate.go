package record

import "time"

// GateFile is the gate record of a `flowtest gate run`, beside run.json.
const GateFile = "gate.json"

// Gate verdicts. PASS only when every scenario of the gate passed in this run or was
// legitimately carried over; FAIL when one failed; INCOMPLETE otherwise (blocked,
// interrupted, not run). Not run is never PASS.
const (
	GatePass       = "PASS"
	GateFail       = "FAIL"
	GateIncomplete = "INCOMPLETE"
)

// StatusCarriedOver is a gate scenario that was not run because a carry-over rule of the gate
// held: it points to the record in which it last passed.
const StatusCarriedOver = "carried-over"

// GateRecord is gate.json: what a release gate required, what ran, what was carried over and
// why, and the verdict. JSON keys avoid the redactor's request-reason names (`reason`,
// `…_reason` other than status_reason): explanations are under `why`.
type GateRecord struct {
	SchemaVersion int `json:"schema_version"`
	// Gate is the gate's name (features/gates/<name>.yaml).
	Gate  string `json:"gate"`
	Title string `json:"title,omitempty"`
	// Definition is the definition file as given; DefinitionSHA256 its content's digest, so a
	// reviewer can tell which version of the gate was applied.
	Definition       string `json:"definition"`
	DefinitionSHA256 string `json:"definition_sha256"`
	// Required is the tag expression of the required scenarios.
	Required string `json:"required"`
	Verdict  string `json:"verdict"` // PASS|FAIL|INCOMPLETE
	// VerdictWhy explains the verdict in one line.
	VerdictWhy string     `json:"verdict_why"`
	SUT        GateSUT    `json:"sut"`
	Since      *GateSince `json:"since,omitempty"`
	// CarryOver is every carry-over rule of the gate and whether it held for this commit.
	CarryOver []CarryOverRule `json:"carry_over"`
	// Scenarios are the gate's scenarios in run order: the required ones and those of the
	// series that carry-over rules cover.
	Scenarios []GateScenario `json:"scenarios"`
	Counts    GateCounts     `json:"counts"`
	// APIRequests are the kintone REST requests of the run the gate decided on, by app role
	// (run.json's api_requests): what the gate cost the tenant's daily budget per app.
	APIRequests APIRequests `json:"api_requests,omitempty"`
	Decided     time.Time   `json:"decided,omitzero"`
	// Archive is the archive folder this record was written into (absolute path).
	Archive string `json:"archive,omitempty"`
}

// GateSUT is the system under test of a gate run.
type GateSUT struct {
	Commit string `json:"commit"` // full commit id, as resolved in the SUT repository
	Given  string `json:"given,omitempty"`
	// Head is the SUT repository's HEAD when it differs from Commit (a warning: the checkout
	// is not the commit the gate is for).
	Head string `json:"head,omitempty"`
}

// GateSince is the archive carried-over evidence comes from (--since-archive).
type GateSince struct {
	Archive string `json:"archive"` // absolute path
	Commit  string `json:"commit"`  // its run's SUT commit (the last accepting commit)
	Target  string `json:"target"`
	Gate    string `json:"gate,omitempty"` // its gate, when it was a gate run
	Verdict string `json:"verdict,omitempty"`
}

// CarryOverRule is one rule of the gate and its outcome for this commit.
type CarryOverRule struct {
	Series        string   `json:"series"`
	Paths         []string `json:"paths"`
	Justification string   `json:"justification"`
	// Scenarios are the series' scenarios the rule covers (the series minus the required
	// ones), in run order.
	Scenarios []string `json:"scenarios"`
	Holds     bool     `json:"holds"`
	// Why says why the rule holds or not (e.g. "the diff touches src/io/reader.ts").
	Why string `json:"why"`
	// Diffs are the `git diff --stat` outputs the decision read, one per base commit.
	Diffs []GateDiff `json:"diffs,omitempty"`
}

// GateDiff is one `git diff --stat` of the SUT repository, quoted as git printed it.
type GateDiff struct {
	Base    string   `json:"base"`
	Head    string   `json:"head"`
	Command string   `json:"command"`
	Stat    string   `json:"stat"`
	Touched []string `json:"touched,omitempty"` // changed files under the rule's paths
}

// GateScenario is one scenario of the gate.
type GateScenario struct {
	ID       string `json:"id"`
	Series   string `json:"series"`
	Required bool   `json:"required"`
	// Status: passed|failed|blocked|interrupted|not-run (from this run) or carried-over.
	// Empty in a plan: the scenario runs and Finish fills it from its record.
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// File is the scenario record in this archive (scenarios/<id>.json).
	File        string       `json:"file,omitempty"`
	CarriedOver *CarriedOver `json:"carried_over,omitempty"`
	// KnownDefect is the id of the known product defect the failed scenario reproduced in
	// this run (KnownDefectMark). The gate still fails: a release gate certifies the
	// product against its contract, and a known defect is a documented breach of it.
	KnownDefect string `json:"known_defect,omitempty"`
}

// CarriedOver points to the record in which a carried-over scenario last passed.
type CarriedOver struct {
	Archive string    `json:"archive"` // absolute path of the archive holding the record
	Commit  string    `json:"commit"`  // SUT commit that record was made on
	Target  string    `json:"target"`
	Record  string    `json:"record"` // the record, relative to Archive
	SHA256  string    `json:"sha256"` // of the record file's bytes
	Passed  time.Time `json:"passed,omitzero"`
	Series  string    `json:"series"` // the rule that carried it over
	// Justification is the rule's text; DiffStat quotes the `git diff --stat` that showed
	// none of the rule's paths changed since Commit.
	Justification string `json:"justification"`
	DiffCommand   string `json:"diff_command"`
	DiffStat      string `json:"diff_stat"`
}

// GateCounts counts the gate's scenarios by status.
type GateCounts struct {
	Total       int `json:"total"`
	Passed      int `json:"passed"`
	CarriedOver int `json:"carried_over"`
	Failed      int `json:"failed"`
	Blocked     int `json:"blocked"`
	Interrupted int `json:"interrupted"`
	NotRun      int `json:"not_run"`
}
