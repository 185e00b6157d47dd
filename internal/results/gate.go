package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"
)

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

// requiredText and detailText are the Required and Detail cells of the gate's scenario
// table, the same in README.md and index.html.
func (s GateScenario) requiredText() string {
	if s.Required {
		return "yes"
	}
	return "no (carry-over series)"
}

func (s GateScenario) detailText() string {
	if co := s.CarriedOver; co != nil {
		return "carried over by the " + co.Series + " rule: " + co.Justification
	}
	return mdtext.OrDash(s.Why)
}

// stateText says what a carry-over rule decided, in both renderings.
func (r CarryOverRule) stateText() string {
	if r.Holds {
		return "holds: the series is carried over"
	}
	return "does not hold: the series runs"
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

// CompleteGate fills the status of every scenario g lists without one from run (its summary
// in run.Scenarios; a scenario with no summary is not run) and decides the verdict.
func CompleteGate(g *GateRecord, run *Run) {
	g.SchemaVersion = SchemaVersion
	byID := map[string]ScenarioSummary{}
	if run != nil {
		for _, s := range run.Scenarios {
			byID[s.ID] = s
		}
	}
	for i := range g.Scenarios {
		gs := &g.Scenarios[i]
		if gs.Status != "" {
			continue
		}
		s, ok := byID[gs.ID]
		switch {
		case !ok:
			gs.Status, gs.Why = StatusNotRun, "no record of it in this run"
		case s.Status == StatusNotRun && s.NotRunCategory == NotRunTag:
			// The gate's own selection ran it; a tag filter here means the run did not.
			gs.Status, gs.Why = StatusNotRun, "not selected by the run: "+s.Reason
		default:
			gs.Status, gs.Why, gs.File = s.Status, s.Reason, s.File
			if m := s.KnownDefect; m != nil {
				if m.Excused() {
					gs.KnownDefect = m.ID
				}
				gs.Why = strings.TrimSuffix(m.Text()+": "+gs.Why, ": ")
			}
		}
	}
	interrupted := run != nil && run.State == RunInterrupted
	g.Verdict, g.VerdictWhy = decideGate(g.Scenarios, interrupted)
	g.Counts = countGate(g.Scenarios)
	if run != nil {
		g.APIRequests = run.APIRequests
	}
	g.Decided = time.Now().UTC()
}

func countGate(scen []GateScenario) GateCounts {
	var c GateCounts
	for _, s := range scen {
		c.Total++
		switch s.Status {
		case StatusPassed:
			c.Passed++
		case StatusCarriedOver:
			c.CarriedOver++
		case StatusFailed:
			c.Failed++
		case StatusBlocked:
			c.Blocked++
		case StatusInterrupted:
			c.Interrupted++
		default:
			c.NotRun++
		}
	}
	return c
}

// decideGate: FAIL when a scenario failed, a known product defect too (the failed scenario
// is listed with its KPD id): a gate certifies the product against its contract, and a known
// defect is a documented breach of it, whatever the run's exit code says; otherwise INCOMPLETE when one is blocked,
// interrupted or not run (or the run was interrupted, or the gate has no scenario); PASS
// only when every scenario passed or was carried over.
func decideGate(scen []GateScenario, interrupted bool) (verdict, why string) {
	byStatus := map[string][]string{}
	for _, s := range scen {
		st := s.Status
		if st != StatusPassed && st != StatusCarriedOver && st != StatusFailed && st != StatusBlocked && st != StatusInterrupted {
			st = StatusNotRun
		}
		id := s.ID
		if s.KnownDefect != "" {
			id += " (known product defect " + s.KnownDefect + ")"
		}
		byStatus[st] = append(byStatus[st], id)
	}
	list := func(st string) string {
		ids := byStatus[st]
		if len(ids) > 5 {
			return strings.Join(ids[:5], ", ") + fmt.Sprintf(", … (%d in all)", len(ids))
		}
		return strings.Join(ids, ", ")
	}
	if n := len(byStatus[StatusFailed]); n > 0 {
		return GateFail, fmt.Sprintf("%d scenario(s) failed: %s", n, list(StatusFailed))
	}
	var gaps []string
	for _, st := range []string{StatusBlocked, StatusInterrupted, StatusNotRun} {
		if n := len(byStatus[st]); n > 0 {
			gaps = append(gaps, fmt.Sprintf("%d %s (%s)", n, statusWord(st), list(st)))
		}
	}
	if interrupted {
		gaps = append(gaps, "the run was interrupted")
	}
	if len(scen) == 0 {
		gaps = append(gaps, "the gate has no scenario")
	}
	if len(gaps) > 0 {
		return GateIncomplete, "not every scenario of the gate passed or was carried over: " + strings.Join(gaps, "; ")
	}
	return GatePass, fmt.Sprintf("%d passed in this run, %d carried over", len(byStatus[StatusPassed]), len(byStatus[StatusCarriedOver]))
}

func statusWord(st string) string {
	switch st {
	case StatusNotRun:
		return "not run"
	case StatusCarriedOver:
		return "carried over"
	}
	return st
}

// ReadGate reads an archive's gate.json; (nil, nil) when the archive has none.
func ReadGate(archiveDir string) (*GateRecord, error) {
	data, err := os.ReadFile(filepath.Join(archiveDir, GateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gate record: %w", err)
	}
	g := &GateRecord{}
	if err := json.Unmarshal(data, g); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(archiveDir, GateFile), err)
	}
	if g.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s has schema_version %d, this flowtest reads up to %d", filepath.Join(archiveDir, GateFile), g.SchemaVersion, SchemaVersion)
	}
	return g, nil
}

// FileSHA256 is the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
