package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/render"
)

// Problem is one way an archive's files do not hold together: a file that is missing, extra,
// not valid JSON (a truncated write), or that contradicts another. File is relative to the
// archive, '/'-separated.
type Problem struct {
	File string
	What string
}

func (p Problem) String() string { return p.File + ": " + p.What }

// CheckIntegrity reads every file of an archive that flowtest itself writes — run.json, the
// scenario records, gate.json, cucumber.json, junit.xml and messages.ndjson — and checks that they hold
// together: each parses, run.json's scenario rows name records that exist and say the same
// id and status, every record is listed, the rows follow run_order, and the totals add up.
//
// An interrupted run (state "interrupted": killed, or still running) is held to what it can
// promise: its run.json is rewritten after each scenario, so a record written after the last
// rewrite may be unlisted (if run_order names it and no row claims it), the reports written
// by Finish may be absent, and a half-written temporary file is expected. A complete run is
// held to all of it. It is separate from the leak scan (Verify) and from schema validation:
// it is about whether the archive is whole, not what its values may be.
func CheckIntegrity(dir string) []Problem {
	c := &integrity{dir: dir}
	run := c.readRun()
	records := c.readRecords(run)
	if run == nil {
		return c.sorted()
	}
	complete := run.State == RunComplete
	c.crossCheck(run, records, complete)
	c.checkReports(run, complete)
	return c.sorted()
}

type integrity struct {
	dir      string
	problems []Problem
}

func (c *integrity) add(file, format string, a ...any) {
	c.problems = append(c.problems, Problem{File: file, What: fmt.Sprintf(format, a...)})
}

func (c *integrity) sorted() []Problem {
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].File < c.problems[j].File })
	return c.problems
}

// readJSON reads name (relative) into v; false with a problem when it is missing (and
// required), unreadable or not one complete JSON value.
func (c *integrity) readJSON(name string, v any, required bool) (present, ok bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		if required {
			c.add(name, "missing")
		}
		return false, false
	}
	if err != nil {
		c.add(name, "cannot be read: %v", err)
		return true, false
	}
	if err := strictJSON(data, v); err != nil {
		c.add(name, "%v", err)
		return true, false
	}
	return true, true
}

// checkMessages checks messages.ndjson where it exists (archives from before it have none):
// every line one JSON message, and a complete run's stream ends with the run's end, so a
// file cut short is named.
func (c *integrity) checkMessages(complete bool) {
	data, err := os.ReadFile(filepath.Join(c.dir, MessagesFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		c.add(MessagesFile, "cannot be read: %v", err)
		return
	}
	last := ""
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		var m map[string]json.RawMessage
		if err := strictJSON([]byte(line), &m); err != nil {
			c.add(MessagesFile, "line %d: %v", n, err)
			return
		}
		for k := range m {
			last = k
		}
	}
	if complete && last != "testRunFinished" {
		c.add(MessagesFile, "ends without testRunFinished (cut short?)")
	}
}

// strictJSON decodes exactly one JSON value filling the whole of data (trailing whitespace
// aside), naming a truncation as such.
func strictJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty (a write that never finished?)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("not valid JSON: it ends in the middle of a value after %d bytes (truncated?)", len(data))
		}
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("not valid JSON: something follows the value at byte %d", dec.InputOffset())
	}
	return nil
}

func (c *integrity) readRun() *Run {
	run := &Run{}
	if _, ok := c.readJSON("run.json", run, true); !ok {
		return nil
	}
	switch {
	case run.SchemaVersion < 1:
		c.add("run.json", "no schema_version: not a run record")
	case run.SchemaVersion > SchemaVersion:
		c.add("run.json", "schema_version %d, this flowtest reads up to %d", run.SchemaVersion, SchemaVersion)
	}
	if run.State != RunComplete && run.State != RunInterrupted {
		c.add("run.json", "state %q is neither %q nor %q", run.State, RunComplete, RunInterrupted)
	}
	return run
}

// scenarioFile is a parsed scenario record and the name of its file.
type scenarioFile struct {
	file string
	s    *Scenario
}

func (c *integrity) readRecords(run *Run) map[string]*scenarioFile {
	out := map[string]*scenarioFile{}
	entries, err := os.ReadDir(filepath.Join(c.dir, ScenarioDir))
	if errors.Is(err, fs.ErrNotExist) {
		c.add(ScenarioDir+"/", "missing (every archive has the folder, even before its first scenario)")
		return out
	}
	if err != nil {
		c.add(ScenarioDir+"/", "cannot be read: %v", err)
		return out
	}
	complete := run != nil && run.State == RunComplete
	for _, e := range entries {
		name := path.Join(ScenarioDir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), TempPrefix):
			// A file being written: expected in a run that was killed, never in a complete one.
			if complete {
				c.add(name, "a half-written file left in a complete run")
			}
			continue
		case !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json"):
			c.add(name, "extra: not a scenario record (the folder holds only <id>.json files)")
			continue
		}
		s := &Scenario{}
		if _, ok := c.readJSON(name, s, true); !ok {
			continue
		}
		switch {
		case s.SchemaVersion < 1:
			c.add(name, "no schema_version: not a scenario record")
			continue
		case s.SchemaVersion > SchemaVersion:
			c.add(name, "schema_version %d, this flowtest reads up to %d", s.SchemaVersion, SchemaVersion)
			continue
		case s.ID == "":
			c.add(name, "no scenario id")
			continue
		}
		if !knownStatus(s.Status) {
			c.add(name, "status %q is not one flowtest writes", s.Status)
		}
		if p := knownDefectProblem(s.Status, s.KnownDefect); p != "" {
			c.add(name, "%s", p)
		}
		out[name] = &scenarioFile{file: name, s: s}
	}
	return out
}

var kpdIDPattern = regexp.MustCompile(`^KPD-[1-9][0-9]*$`)

// knownDefectProblem is what is wrong with a record's known-defect mark for its status: an
// id that is no KPD-<n>, an outcome flowtest does not write, or an outcome its status
// contradicts (reproduced and other-failure are failures, no-longer-reproduces is a pass).
func knownDefectProblem(status string, m *KnownDefectMark) string {
	if m == nil {
		return ""
	}
	if !kpdIDPattern.MatchString(m.ID) {
		return fmt.Sprintf("known_defect id %q is not KPD-<n>", m.ID)
	}
	want := ""
	switch m.Outcome {
	case KDReproduced, KDOtherFailure:
		want = StatusFailed
	case KDNoLongerReproduces:
		want = StatusPassed
	default:
		return fmt.Sprintf("known_defect %s: outcome %q is not one flowtest writes", m.ID, m.Outcome)
	}
	if status != want {
		return fmt.Sprintf("known_defect %s is %s, but the status is %s (want %s)", m.ID, m.Outcome, status, want)
	}
	return ""
}

func knownStatus(s string) bool {
	switch s {
	case StatusPassed, StatusFailed, StatusBlocked, StatusInterrupted, StatusNotRun:
		return true
	}
	return false
}

// crossCheck relates run.json's rows to the records and to run_order.
func (c *integrity) crossCheck(run *Run, records map[string]*scenarioFile, complete bool) {
	inOrder := map[string]int{}
	for _, id := range run.RunOrder {
		inOrder[id]++
	}
	listedFile := map[string]bool{}
	rowsOf := map[string]int{}
	for i, row := range run.Scenarios {
		rowsOf[row.ID]++
		c.checkRow(i, row, inOrder, listedFile, records)
	}
	c.checkUnlisted(run, records, listedFile, inOrder, rowsOf, complete)
	if complete {
		c.checkRunOrder(run, inOrder, rowsOf)
	}
	want := ComputeTotals(run.Scenarios)
	if run.Totals.NotSelected == 0 {
		// Archives written before totals.not_selected existed leave it out: not a mismatch.
		want.NotSelected = 0
	}
	if want != run.Totals {
		c.add("run.json", "totals %s do not add up: the rows give %s", totalsText(run.Totals), totalsText(want))
	}
}

// checkRow checks the i-th scenario row of run.json: in run_order, naming one record of the
// records folder no other row names, which exists and agrees with the row. listedFile
// gathers the records named.
func (c *integrity) checkRow(i int, row ScenarioSummary, inOrder map[string]int, listedFile map[string]bool, records map[string]*scenarioFile) {
	if inOrder[row.ID] == 0 {
		c.add("run.json", "scenario row %d (%s) is not in run_order", i+1, row.ID)
	}
	if row.File == "" {
		c.add("run.json", "scenario row %d (%s) names no record file", i+1, row.ID)
		return
	}
	file := path.Clean(row.File)
	if path.Dir(file) != ScenarioDir {
		// Anything else would be read (or found missing) outside the records, or outside
		// the archive: "../x.json".
		c.add("run.json", "scenario row %d (%s) names %q, not a record in %s/", i+1, row.ID, row.File, ScenarioDir)
		return
	}
	if listedFile[file] {
		c.add("run.json", "two scenario rows name the record %s", file)
		return
	}
	listedFile[file] = true
	rec := records[file]
	if rec == nil {
		if _, err := os.Stat(filepath.Join(c.dir, filepath.FromSlash(file))); errors.Is(err, fs.ErrNotExist) {
			c.add(file, "missing: run.json lists scenario %s in it", row.ID)
		} // else it exists and its own problem (unreadable, truncated) was named
		return
	}
	c.checkRecordAgainstRow(file, rec.s, row)
}

// checkRecordAgainstRow checks that the record in file says what its run.json row says.
func (c *integrity) checkRecordAgainstRow(file string, s *Scenario, row ScenarioSummary) {
	if s.ID != row.ID {
		c.add(file, "holds scenario %s, run.json says %s", s.ID, row.ID)
	}
	if s.Status != row.Status {
		c.add(file, "status %s, run.json says %s for %s", s.Status, row.Status, row.ID)
	}
	if !sameMark(s.KnownDefect, row.KnownDefect) {
		c.add(file, "known_defect %s, run.json says %s for %s", markText(s.KnownDefect), markText(row.KnownDefect), row.ID)
	}
	if s.DurationMS != row.DurationMS {
		c.add(file, "duration_ms %d, run.json says %d for %s", s.DurationMS, row.DurationMS, row.ID)
	}
}

// checkUnlisted names the records no row lists, except those an interrupted run may have
// written after its last run.json update (counted into rowsOf).
func (c *integrity) checkUnlisted(run *Run, records map[string]*scenarioFile, listedFile map[string]bool, inOrder, rowsOf map[string]int, complete bool) {
	var unlisted []string
	for file := range records {
		if !listedFile[file] {
			unlisted = append(unlisted, file)
		}
	}
	sort.Strings(unlisted)
	for _, file := range unlisted {
		id := records[file].s.ID
		switch {
		case !complete && len(run.RunOrder) == 0:
			// run.json is still the provisional one Create wrote: the runner first rewrites
			// it after the first scenario that ran, and records of the scenarios not run
			// before it are written without a rewrite.
		case inOrder[id] == 0:
			c.add(file, "extra: scenario %s is not in run.json's run_order", id)
		case complete:
			c.add(file, "extra: run.json does not list this record of %s", id)
		case rowsOf[id] >= inOrder[id]:
			c.add(file, "extra: run.json already lists every record of %s elsewhere", id)
		default:
			rowsOf[id]++ // written after the interrupted run's last run.json update
		}
	}
}

// checkRunOrder checks a complete run's rows against its run_order: every scenario has a
// row, in that order, and the total counts them.
func (c *integrity) checkRunOrder(run *Run, inOrder, rowsOf map[string]int) {
	var rowIDs []string
	for _, row := range run.Scenarios {
		rowIDs = append(rowIDs, row.ID)
	}
	for _, id := range run.RunOrder {
		if rowsOf[id] < inOrder[id] {
			c.add("run.json", "scenario %s of run_order has no row (and no record)", id)
			rowsOf[id] = inOrder[id] // once per id
		}
	}
	if len(rowIDs) == len(run.RunOrder) && strings.Join(rowIDs, "\n") != strings.Join(run.RunOrder, "\n") {
		c.add("run.json", "scenario rows are not in run_order")
	}
	if run.Totals.Total != len(run.RunOrder) {
		c.add("run.json", "totals.total %d, run_order has %d scenario(s)", run.Totals.Total, len(run.RunOrder))
	}
}

func totalsText(t Totals) string {
	return fmt.Sprintf("{total %d, passed %d, failed %d, blocked %d, interrupted %d, not_run %d, not_selected %d, known_defects %d, known_defects_not_reproduced %d, duration_ms %d}",
		t.Total, t.Passed, t.Failed, t.Blocked, t.Interrupted, t.NotRun, t.NotSelected, t.KnownDefects, t.KnownDefectsNotReproduced, t.DurationMS)
}

func sameMark(a, b *KnownDefectMark) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func markText(m *KnownDefectMark) string {
	if m == nil {
		return "none"
	}
	return m.ID + " " + m.Outcome
}

// checkReports checks the files Finish writes: a complete run has them all, each parses, and
// they are about the same scenarios; an interrupted run may lack them, but what it has must
// parse.
func (c *integrity) checkReports(run *Run, complete bool) {
	var feats []render.CucumberFeature
	if _, ok := c.readJSON("cucumber.json", &feats, complete); ok {
		n := 0
		for _, f := range feats {
			n += len(f.Elements)
		}
		// The scenarios the selection left out have no element (totals.not_selected counts
		// them; archives from before it was written list every scenario, and leave it out).
		if want := len(run.Scenarios) - run.Totals.NotSelected; complete && n != want {
			c.add("cucumber.json", "%d scenario(s), run.json lists %d selected", n, want)
		}
	}
	c.checkMessages(complete)
	if data, err := os.ReadFile(filepath.Join(c.dir, "junit.xml")); err == nil {
		if err := wellFormedXML(data); err != nil {
			c.add("junit.xml", "not well-formed XML: %v", err)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if complete {
			c.add("junit.xml", "missing")
		}
	} else {
		c.add("junit.xml", "cannot be read: %v", err)
	}
	if run.Gate != nil {
		file := run.Gate.File
		if file == "" {
			file = GateFile
		}
		if !filepath.IsLocal(filepath.FromSlash(file)) {
			c.add("run.json", "the gate record %q is outside the archive", file)
			return
		}
		g := &GateRecord{}
		if _, ok := c.readJSON(file, g, true); ok && g.Verdict != run.Gate.Verdict {
			c.add(file, "verdict %s, run.json says %s", g.Verdict, run.Gate.Verdict)
		}
	} else if _, err := os.Stat(filepath.Join(c.dir, GateFile)); err == nil {
		g := &GateRecord{}
		if _, ok := c.readJSON(GateFile, g, false); ok && complete {
			c.add(GateFile, "extra: run.json names no gate")
		}
	}
}

// wellFormedXML reads every token of data; a truncated file ends inside an element.
func wellFormedXML(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	switch {
	case depth != 0:
		return fmt.Errorf("it ends with %d element(s) open (truncated?)", depth)
	case roots != 1:
		return fmt.Errorf("%d root elements, want 1", roots)
	}
	return nil
}
