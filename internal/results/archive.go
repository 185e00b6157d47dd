package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/results/render"
)

// Archive is one run's results folder. Every byte written into it goes through its Writer,
// which redacts; there is no other way to put a file there through this type.
type Archive struct {
	dir   string
	label string
	red   *redact.Redactor
	w     *Writer // redacts by the record rules, into dir
	start time.Time

	mu        sync.Mutex
	gate      *GateRecord       // set by SetGate: Finish completes and writes it
	names     map[string]bool   // scenario files written, relative paths
	scenarios []*Scenario       // redacted copies, in write order, for the reports
	files     []string          // scenario file of each entry of scenarios
	order     map[string]int    // SetOrder: run order of scenario ids
	sources   map[string][]byte // SetFeatureSources: feature file texts by path, for messages.ndjson
}

// MessagesFile is the archive's Cucumber Messages stream (NDJSON).
const MessagesFile = "messages.ndjson"

// SetFeatureSources gives the text of the feature files the records name (by their
// feature_file): messages.ndjson carries each file's source and gherkin document, which
// Cucumber's report tools need to show a scenario. Finish leaves out a scenario whose file
// is not given, and says how many it left out.
func (a *Archive) SetFeatureSources(sources map[string][]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sources = sources
}

// SetOrder gives the run order of the scenario ids (the manifest order of the selection):
// run.json, README.md, index.html, cucumber.json and junit.xml list the scenarios in this
// order whatever order they were written in (concurrent scenarios end in any order). Ids
// not listed follow, in write order; a repeated id keeps its write order among its kind.
func (a *Archive) SetOrder(ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.order = map[string]int{}
	for i, id := range ids {
		if _, dup := a.order[id]; !dup {
			a.order[id] = i
		}
	}
}

// ordered returns the scenarios written so far and their files in run order (SetOrder).
// The caller holds a.mu.
func (a *Archive) ordered() ([]*Scenario, []string) {
	idx := make([]int, len(a.scenarios))
	for i := range idx {
		idx[i] = i
	}
	rank := func(i int) int {
		if r, ok := a.order[a.scenarios[i].ID]; ok {
			return r
		}
		return len(a.order)
	}
	sort.SliceStable(idx, func(x, y int) bool { return rank(idx[x]) < rank(idx[y]) })
	scen := make([]*Scenario, len(idx))
	files := make([]string, len(idx))
	for i, j := range idx {
		scen[i], files[i] = a.scenarios[j], a.files[j]
	}
	return scen, files
}

// ScenarioDir is the archive subfolder holding one file per scenario.
const ScenarioDir = "scenarios"

// Create makes <outDir>/<YYYY-MM-DD>/<HHMMSS>-<label>/ (date and time of now in now's own
// location; the caller passes local or UTC time as it wants them shown) and writes a
// provisional run.json with state "interrupted", so that a run killed before Finish still
// leaves an archive that says so. If the folder exists (two runs in the same second), "-2",
// "-3", … is appended. label is sanitized for a file name; empty means "all".
func Create(outDir, label string, now time.Time, red *redact.Redactor) (*Archive, error) {
	if red == nil {
		return nil, errors.New("create archive: a redactor is required")
	}
	label = record.SanitizeLabel(label)
	dir, err := NewDatedDir(outDir, label, now)
	if err != nil {
		return nil, fmt.Errorf("create archive folder: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, ScenarioDir), 0o755); err != nil {
		return nil, fmt.Errorf("create archive folder %s: %w", dir, err)
	}
	a := &Archive{dir: dir, label: label, red: red, w: NewWriter(dir, red, JSONRecord), start: now, names: map[string]bool{}}
	if err := a.UpdateRun(&Run{Label: label, State: RunInterrupted, Start: now}); err != nil {
		return nil, err
	}
	return a, nil
}

// NewDatedDir makes <outDir>/<YYYY-MM-DD>/<HHMMSS>-<label>/ (label sanitized; "-2", "-3", …
// appended when the folder exists) and returns its path: the place of an archive, and of a
// rehearsal that holds several.
func NewDatedDir(outDir, label string, now time.Time) (string, error) {
	parent := filepath.Join(outDir, now.Format("2006-01-02"))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	base := now.Format("150405") + "-" + record.SanitizeLabel(label)
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return "", err
		}
	}
}

// Dir is the archive folder.
func (a *Archive) Dir() string { return a.dir }

// Redactor is the redactor every file of this archive goes through.
func (a *Archive) Redactor() *redact.Redactor { return a.red }

// WriteScenario redacts s and writes it at once to scenarios/<id>.json (atomically: a crash
// leaves either the previous state or the whole file). A second scenario with the same id gets
// "-2", "-3", …. s itself is not modified.
func (a *Archive) WriteScenario(s *Scenario) error {
	if s == nil {
		return errors.New("write scenario: nil scenario")
	}
	red := a.redactScenario(s)
	data, err := json.Marshal(red)
	if err != nil {
		return fmt.Errorf("write scenario %s: encode: %w", red.ID, err)
	}
	a.mu.Lock()
	base := record.SanitizeLabel(red.ID)
	if red.ID == "" {
		base = "scenario"
	}
	name := path.Join(ScenarioDir, base+".json")
	for i := 2; a.names[name]; i++ {
		name = path.Join(ScenarioDir, fmt.Sprintf("%s-%d.json", base, i))
	}
	a.names[name] = true
	a.mu.Unlock()
	if err := a.write(name, data); err != nil {
		return fmt.Errorf("write scenario %s: %w", red.ID, err)
	}
	a.mu.Lock()
	a.scenarios = append(a.scenarios, red)
	a.files = append(a.files, name)
	a.mu.Unlock()
	return nil
}

// Summaries returns the run.json rows of the scenarios written so far, in run order
// (SetOrder; write order without it).
func (a *Archive) Summaries() []ScenarioSummary {
	a.mu.Lock()
	defer a.mu.Unlock()
	scen, files := a.ordered()
	out := make([]ScenarioSummary, len(scen))
	for i, s := range scen {
		out[i] = Summarize(s, files[i])
	}
	return out
}

// UpdateRun (re)writes run.json, e.g. after every scenario so that a killed run leaves its
// progress. Missing fields are filled as in Finish, except that State stays as given.
func (a *Archive) UpdateRun(run *Run) error {
	r := a.prepareRun(run)
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("write run.json: encode: %w", err)
	}
	return a.write("run.json", data)
}

// SetGate makes this run's archive a gate run's: Finish completes g with the statuses of the
// scenarios that ran (those g lists with an empty status), decides its verdict, writes it as
// gate.json and shows it in README.md and index.html. g is not copied; Finish fills it in.
func (a *Archive) SetGate(g *GateRecord) {
	a.mu.Lock()
	a.gate = g
	a.mu.Unlock()
}

// Finish writes run.json, README.md (the acceptance record), summary.md (its few lines for a
// CI job summary), cucumber.json, junit.xml, messages.ndjson (Cucumber Messages, with the
// feature texts of SetFeatureSources) and index.html (the record as one self-contained
// page), and gate.json for a gate run (SetGate).
// Empty fields are filled: SchemaVersion; State ("complete"); Label; Scenarios (the ones
// written through this archive, when the caller passes none); Totals (when zero, computed
// from Scenarios).
func (a *Archive) Finish(run *Run) error {
	if run == nil {
		return errors.New("finish archive: nil run")
	}
	r := a.prepareRun(run)
	if r.State == "" {
		r.State = RunComplete
	}
	var errs []error
	a.mu.Lock()
	gate, sources := a.gate, a.sources
	scen, _ := a.ordered()
	a.mu.Unlock()
	if gate != nil {
		CompleteGate(gate, r)
		if abs, err := filepath.Abs(a.dir); err == nil {
			gate.Archive = abs
		} else {
			gate.Archive = a.dir
		}
		r.Gate = &GateRef{Name: gate.Gate, Verdict: gate.Verdict, File: GateFile}
		if gd, err := json.Marshal(gate); err != nil {
			errs = append(errs, fmt.Errorf("%s: encode: %w", GateFile, err))
		} else if err := a.write(GateFile, gd); err != nil {
			errs = append(errs, err)
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("write run.json: encode: %w", err)
	}
	if err := a.write("run.json", data); err != nil {
		errs = append(errs, err)
	}
	view := render.NewView(r, scen, gate)
	if err := a.write("README.md", render.Readme(view)); err != nil {
		errs = append(errs, err)
	}
	if err := a.write(SummaryFile, render.Summary(view)); err != nil {
		errs = append(errs, err)
	}
	if page, err := render.Index(view); err != nil {
		errs = append(errs, err)
	} else if err := a.write(IndexFile, page); err != nil {
		errs = append(errs, err)
	}
	if cj, err := render.Cucumber(r, scen); err != nil {
		errs = append(errs, fmt.Errorf("cucumber.json: %w", err))
	} else if err := a.write("cucumber.json", cj); err != nil {
		errs = append(errs, err)
	}
	if jx, err := render.JUnit(r, scen); err != nil {
		errs = append(errs, fmt.Errorf("junit.xml: %w", err))
	} else if err := a.write("junit.xml", jx); err != nil {
		errs = append(errs, err)
	}
	if nd, err := render.Messages(r, scen, sources); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", MessagesFile, err))
	} else if err := a.write(MessagesFile, nd); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prepareRun returns a redacted copy of run with defaults filled in.
func (a *Archive) prepareRun(run *Run) *Run {
	r := *run
	r.SchemaVersion = SchemaVersion
	if r.Label == "" {
		r.Label = a.label
	}
	if r.Start.IsZero() {
		r.Start = a.start
	}
	if len(r.Scenarios) == 0 {
		r.Scenarios = a.Summaries()
	}
	if r.Totals == (Totals{}) {
		r.Totals = ComputeTotals(r.Scenarios)
	}
	return redactRun(a.red, &r)
}

// WriteFile writes any other file into the archive (name relative to it, '/'-separated),
// redacted: JSON files (".json") token by token when they parse, everything as bytes.
func (a *Archive) WriteFile(name string, data []byte) error { return a.w.WriteFile(name, data) }

// write is the one writer of the archive's own files (their names are known to be inside it).
func (a *Archive) write(name string, data []byte) error { return a.w.write(name, data) }

// redactMark returns a redacted copy of a known-defect mark (nil for none).
func redactMark(r *redact.Redactor, m *KnownDefectMark) *KnownDefectMark {
	if m == nil {
		return nil
	}
	return &KnownDefectMark{ID: r.String(m.ID), Product: r.String(m.Product), Assertion: r.String(m.Assertion),
		Evidence: r.String(m.Evidence), Outcome: r.String(m.Outcome)}
}

// redactScenario returns a redacted deep copy of s with defaults filled and tails cut to
// TailLimit. The JSON pass in write() re-checks the encoded form; this copy is what the
// README, cucumber.json and junit.xml are built from.
func (a *Archive) redactScenario(s *Scenario) *Scenario {
	r := a.red
	c := *s
	c.SchemaVersion = SchemaVersion
	if c.DurationMS == 0 && !c.Start.IsZero() && c.End.After(c.Start) {
		c.DurationMS = c.End.Sub(c.Start).Milliseconds()
	}
	c.ID, c.Name, c.Feature, c.FeatureFile = r.String(c.ID), r.String(c.Name), r.String(c.Feature), r.String(c.FeatureFile)
	c.Series, c.Status, c.Reason = r.String(c.Series), r.String(c.Status), r.String(c.Reason)
	c.KnownDefect = redactMark(r, c.KnownDefect)
	c.Tags = r.Strings(c.Tags)
	c.Steps = eachRedacted(s.Steps, false, func(st Step) Step {
		st.Text, st.Keyword, st.Status, st.Error = r.String(st.Text), r.String(st.Keyword), r.String(st.Status), r.String(st.Error)
		if st.Match != nil {
			st.Match = &StepMatch{Location: r.String(st.Match.Location), Pattern: r.String(st.Match.Pattern)}
		}
		return st
	})
	c.Assertions = eachRedacted(s.Assertions, false, func(as Assertion) Assertion {
		as.What, as.Expected, as.Seen = r.String(as.What), r.String(as.Expected), r.String(as.Seen)
		return as
	})
	c.Notes = eachRedacted(s.Notes, true, func(n Note) Note {
		return Note{What: r.String(n.What), Detail: r.String(n.Detail)}
	})
	c.Processes = eachRedacted(s.Processes, false, func(p Process) Process { return redactProcess(r, p) })
	redactTimedEvidence(r, s, &c)
	if s.Differential != nil {
		c.Differential = redactDifferential(r, s.Differential)
	}
	c.Traffic = map[string]int{}
	for k, v := range s.Traffic {
		c.Traffic[r.String(k)] += v
	}
	c.APIRequests = redactAPIRequests(r, s.APIRequests)
	c.TrafficLog = eachRedacted(s.TrafficLog, true, func(t TrafficLine) TrafficLine {
		t.Process, t.Method, t.Path, t.App, t.RecordID = r.String(t.Process), r.String(t.Method), r.String(t.Path), r.String(t.App), r.String(t.RecordID)
		t.RecordKey = r.String(t.RecordKey)
		t.Fields, t.Error = r.Strings(t.Fields), r.String(t.Error)
		return t
	})
	c.Cleanup.Actions = r.Strings(s.Cleanup.Actions)
	c.Cleanup.Error = r.String(s.Cleanup.Error)
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.Cleanup.Actions == nil {
		c.Cleanup.Actions = []string{}
	}
	return &c
}

// redactProcess is a process of a record, redacted: its argv and tails (cut to TailLimit),
// its exit code copied so the record shares nothing with the harness's.
func redactProcess(r *redact.Redactor, p Process) Process {
	p.Name, p.Signal = r.String(p.Name), r.String(p.Signal)
	p.Argv = r.Argv(p.Argv)
	if p.ExitCode != nil {
		code := *p.ExitCode
		p.ExitCode = &code
	}
	p.StdoutTail, p.StderrTail = r.Tail(p.StdoutTail, TailLimit), r.Tail(p.StderrTail, TailLimit)
	return p
}

// redactTimedEvidence redacts into c what s recorded on the timeline: barrier arrivals,
// fault firings, node attempts and waits.
func redactTimedEvidence(r *redact.Redactor, s, c *Scenario) {
	c.Barriers = eachRedacted(s.Barriers, false, func(b BarrierArrival) BarrierArrival {
		b.ID, b.Name, b.Process, b.Phase, b.Method, b.Path = r.String(b.ID), r.String(b.Name), r.String(b.Process), r.String(b.Phase), r.String(b.Method), r.String(b.Path)
		return b
	})
	c.Faults = eachRedacted(s.Faults, true, func(f FaultFiring) FaultFiring {
		f.Fault, f.Process, f.Action, f.Method, f.Path = r.String(f.Fault), r.String(f.Process), r.String(f.Action), r.String(f.Method), r.String(f.Path)
		f.App, f.RecordID, f.RecordKey, f.Error = r.String(f.App), r.String(f.RecordID), r.String(f.RecordKey), r.String(f.Error)
		return f
	})
	c.Attempts = eachRedacted(s.Attempts, true, func(at Attempt) Attempt {
		at.Node, at.Status, at.ResultCode, at.InvocationID = r.String(at.Node), r.String(at.Status), r.String(at.ResultCode), r.String(at.InvocationID)
		return at
	})
	c.Waits = eachRedacted(s.Waits, false, func(w Wait) Wait {
		w.Name, w.What, w.Outcome = r.String(w.Name), r.String(w.What), r.String(w.Outcome)
		w.LastObservation, w.LastError = r.String(w.LastObservation), r.String(w.LastError)
		return w
	})
}

// redactDifferential is the differential record of a scenario, redacted.
func redactDifferential(r *redact.Redactor, diff *Differential) *Differential {
	return &Differential{
		Records: eachRedacted(diff.Records, false, func(d DiffRecord) DiffRecord {
			f := make(map[string]string, len(d.Fields))
			for k, v := range d.Fields {
				f[r.String(k)] = r.String(v)
			}
			return DiffRecord{App: r.String(d.App), Type: r.String(d.Type), Fields: f}
		}),
		Processes: eachRedacted(diff.Processes, false, func(p DiffProcess) DiffProcess {
			p.Name, p.StdoutHead = r.String(p.Name), r.Strings(p.StdoutHead)
			if p.ExitCode != nil {
				code := *p.ExitCode
				p.ExitCode = &code
			}
			return p
		}),
	}
}

// eachRedacted is the copy of a scenario's list with every element through `through`; keepNil
// leaves a nil list nil (the lists written only when there is something in them), otherwise a
// nil list becomes an empty one (written as []).
func eachRedacted[T any](in []T, keepNil bool, through func(T) T) []T {
	if in == nil && keepNil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = through(v)
	}
	return out
}

// redactAPIRequests is a redacted deep copy of a (its keys are roles, but a copy through
// the redactor keeps every string of a record under one rule).
func redactAPIRequests(r *redact.Redactor, a APIRequests) APIRequests {
	if a == nil {
		return nil
	}
	out := APIRequests{}
	for app, c := range a {
		m := map[string]int64{}
		for method, n := range c.ByMethod {
			m[r.String(method)] += n
		}
		var origins map[string]int64
		for origin, n := range c.ByOrigin {
			if origins == nil {
				origins = map[string]int64{}
			}
			origins[r.String(origin)] += n
		}
		out[r.String(app)] = AppRequests{Requests: c.Requests, ByMethod: m, ByOrigin: origins, Throttled: c.Throttled}
	}
	return out
}

// redactRun returns a redacted deep copy of run.
func redactRun(r *redact.Redactor, run *Run) *Run {
	c := *run
	c.RunnerVersion, c.Target, c.Profile = r.String(c.RunnerVersion), r.String(c.Target), r.String(c.Profile)
	c.OS, c.TagExpression, c.Label, c.State = r.String(c.OS), r.String(c.TagExpression), r.String(c.Label), r.String(c.State)
	c.SUT.Commit, c.SUT.CommitSource, c.SUT.Branch = r.String(c.SUT.Commit), r.String(c.SUT.CommitSource), r.String(c.SUT.Branch)
	c.SUT.Versions = r.StringMap(run.SUT.Versions)
	c.Environment = r.StringMap(run.Environment)
	c.RunOrder = r.Strings(run.RunOrder)
	if run.Command != nil {
		c.Command = r.Argv(run.Command)
	}
	if run.ExitCode != nil {
		code := *run.ExitCode
		c.ExitCode = &code
	}
	c.FeaturesDigest = r.String(c.FeaturesDigest)
	if run.Flowtest != nil {
		b := *run.Flowtest
		b.Version, b.Commit = r.String(b.Version), r.String(b.Commit)
		c.Flowtest = &b
	}
	if run.Product != nil {
		p := *run.Product
		p.Kind, p.Source, p.Package, p.Version, p.Node = r.String(p.Kind), r.String(p.Source), r.String(p.Package), r.String(p.Version), r.String(p.Node)
		c.Product = &p
	}
	if run.Gate != nil {
		g := *run.Gate
		g.Name, g.Verdict, g.File = r.String(g.Name), r.String(g.Verdict), r.String(g.File)
		c.Gate = &g
	}
	if run.Runner != nil {
		rc := *run.Runner
		rc.SlowestSetups = make([]ScenarioTime, len(run.Runner.SlowestSetups))
		for i, s := range run.Runner.SlowestSetups {
			rc.SlowestSetups[i] = ScenarioTime{ID: r.String(s.ID), MS: s.MS}
		}
		c.Runner = &rc
	}
	c.APIRequests = redactAPIRequests(r, run.APIRequests)
	if run.APIBudget != nil {
		b := APIBudget{PerApp: run.APIBudget.PerApp, Basis: r.String(run.APIBudget.Basis), Estimate: map[string]int64{}}
		for app, n := range run.APIBudget.Estimate {
			b.Estimate[r.String(app)] = n
		}
		c.APIBudget = &b
	}
	c.Scenarios = make([]ScenarioSummary, len(run.Scenarios))
	for i, s := range run.Scenarios {
		s.ID, s.Name, s.Feature, s.Series = r.String(s.ID), r.String(s.Name), r.String(s.Feature), r.String(s.Series)
		s.Tags = r.Strings(s.Tags)
		s.Status, s.Reason, s.NotRunCategory, s.File = r.String(s.Status), r.String(s.Reason), r.String(s.NotRunCategory), r.String(s.File)
		s.KnownDefect = redactMark(r, s.KnownDefect)
		c.Scenarios[i] = s
	}
	c.Evidence = make([]EvidenceRow, len(run.Evidence))
	for i, e := range run.Evidence {
		e.Criterion, e.Environment, e.Result, e.Limits = r.String(e.Criterion), r.String(e.Environment), r.String(e.Result), r.String(e.Limits)
		e.Scenarios = r.Strings(e.Scenarios)
		c.Evidence[i] = e
	}
	if c.RunOrder == nil {
		c.RunOrder = []string{}
	}
	return &c
}
