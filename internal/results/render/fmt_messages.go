package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// MessagesProtocol is the Cucumber Messages version the NDJSON speaks: the version of
// github.com/cucumber/messages/go in go.mod (a test holds the two together).
const MessagesProtocol = "34.2.0"

// Messages renders messages.ndjson, the Cucumber Messages stream of the run that Cucumber's
// HTML formatter, Allure and other report tools read: meta; per feature file its source,
// gherkin document and pickles; the step definitions that ran; then the test run, each
// test case with its steps' results, and the run's end. It is built from the records (redacted
// already) and the feature files' text (sources, by the records' feature_file), parsed with
// the gherkin library godog uses. Scenarios the selection left out are absent, from the
// gherkin documents too; a selected scenario whose feature text is not at hand is left out
// and the run's finishing message counts it.
func Messages(run *record.Run, scen []*record.Scenario, sources map[string][]byte) ([]byte, error) {
	m := &msgStream{}
	m.enc = json.NewEncoder(&m.buf)
	m.emit(&messages.Envelope{Meta: meta(run)})
	cases, missing, err := m.documents(selectedRecords(run, scen), sources)
	if err != nil {
		return nil, err
	}
	defs := m.stepDefinitions(cases)
	hookID := ""
	if slices.ContainsFunc(cases, needsHook) {
		hookID = m.id()
		m.emit(&messages.Envelope{Hook: &messages.Hook{Id: hookID, Name: "flowtest: status, checks and cleanup after the steps",
			SourceReference: &messages.SourceReference{Uri: "flowtest"}, Type: messages.HookType_AFTER_TEST_CASE}})
	}
	runID := m.id()
	m.emit(&messages.Envelope{TestRunStarted: &messages.TestRunStarted{Id: runID, Timestamp: stamp(run.Start)}})
	for _, c := range cases {
		m.testCase(c, defs, hookID, runID)
	}
	for _, c := range cases {
		m.execute(c)
	}
	fin := &messages.TestRunFinished{TestRunStartedId: runID, Success: runSucceeded(run, scen), Timestamp: stamp(runEnd(run, scen))}
	if missing > 0 {
		fin.Message = fmt.Sprintf("%d selected scenarios left out: their feature file's text was not at hand", missing)
	}
	m.emit(&messages.Envelope{TestRunFinished: fin})
	return m.buf.Bytes(), m.err
}

// msgStream writes envelopes, one JSON object a line, with ids counted from 0 so that the
// same records give the same stream.
type msgStream struct {
	buf bytes.Buffer
	enc *json.Encoder
	ids messages.Incrementing
	err error
}

func (m *msgStream) emit(e *messages.Envelope) {
	if m.err == nil {
		m.err = m.enc.Encode(e)
	}
}

func (m *msgStream) id() string { return m.ids.NewId() }

// msgCase is a record with its pickle and, once made, its test case; steps[i] is the record's
// step of the test case's i-th step (-1: none, or the hook).
type msgCase struct {
	rec    *record.Scenario
	pickle *messages.Pickle
	tc     *messages.TestCase
	steps  []int
}

func meta(run *record.Run) *messages.Meta {
	goos, arch, ok := strings.Cut(run.OS, "/")
	if !ok {
		goos, arch = runtime.GOOS, runtime.GOARCH
	}
	return &messages.Meta{ProtocolVersion: MessagesProtocol,
		Implementation: &messages.Product{Name: "flowtest", Version: run.RunnerVersion},
		Runtime:        &messages.Product{Name: "go", Version: runtime.Version()},
		Os:             &messages.Product{Name: goos}, Cpu: &messages.Product{Name: arch}}
}

// documents emits, per feature file of the records (in their order), its source, its gherkin
// document reduced to the records' scenarios, and their pickles; it returns the records with
// their pickles and how many records had no feature text or no pickle.
func (m *msgStream) documents(recs []*record.Scenario, sources map[string][]byte) (cases []*msgCase, missing int, err error) {
	byFile := map[string][]*record.Scenario{}
	var files []string
	for _, r := range recs {
		if _, ok := sources[r.FeatureFile]; !ok || r.FeatureFile == "" {
			missing++
			continue
		}
		if _, seen := byFile[r.FeatureFile]; !seen {
			files = append(files, r.FeatureFile)
		}
		byFile[r.FeatureFile] = append(byFile[r.FeatureFile], r)
	}
	for _, uri := range files {
		src := sources[uri]
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(src), m.id)
		if err != nil {
			return nil, 0, fmt.Errorf("messages.ndjson: parse %s: %w", uri, err)
		}
		doc.Uri = uri
		byTag := map[string]*messages.Pickle{}
		for _, p := range gherkin.Pickles(*doc, uri, m.id) {
			for _, t := range p.Tags {
				if _, dup := byTag[t.Name]; !dup {
					byTag[t.Name] = p
				}
			}
		}
		var mine []*msgCase
		keep := map[string]bool{}
		for _, r := range byFile[uri] {
			p := byTag["@"+r.ID]
			if p == nil {
				missing++
				continue
			}
			mine = append(mine, &msgCase{rec: r, pickle: p})
			for _, id := range p.AstNodeIds {
				keep[id] = true
			}
		}
		pruneDocument(doc, keep)
		m.emit(&messages.Envelope{Source: &messages.Source{Uri: uri, Data: string(src), MediaType: messages.SourceMediaType_TEXT_X_CUCUMBER_GHERKIN_PLAIN}})
		m.emit(&messages.Envelope{GherkinDocument: doc})
		for _, c := range mine {
			m.emit(&messages.Envelope{Pickle: c.pickle})
		}
		cases = append(cases, mine...)
	}
	return cases, missing, nil
}

// pruneDocument drops from doc the scenarios, and the Examples rows, that no kept pickle
// came from: what the selection left out is not in the stream.
func pruneDocument(doc *messages.GherkinDocument, keep map[string]bool) {
	if doc.Feature == nil {
		return
	}
	var children []*messages.FeatureChild
	for _, ch := range doc.Feature.Children {
		switch {
		case ch.Scenario != nil:
			if keepScenario(ch.Scenario, keep) {
				children = append(children, ch)
			}
		case ch.Rule != nil:
			var rc []*messages.RuleChild
			for _, c := range ch.Rule.Children {
				if c.Scenario == nil || keepScenario(c.Scenario, keep) {
					rc = append(rc, c)
				}
			}
			if slices.ContainsFunc(rc, func(c *messages.RuleChild) bool { return c.Scenario != nil }) {
				ch.Rule.Children = rc
				children = append(children, ch)
			}
		default:
			children = append(children, ch) // a Background
		}
	}
	doc.Feature.Children = children
}

// keepScenario reports whether sc holds a kept pickle, and drops its Examples rows (and
// blocks) that hold none.
func keepScenario(sc *messages.Scenario, keep map[string]bool) bool {
	if !keep[sc.Id] {
		return false
	}
	var examples []*messages.Examples
	for _, ex := range sc.Examples {
		ex.TableBody = slices.DeleteFunc(ex.TableBody, func(r *messages.TableRow) bool { return !keep[r.Id] })
		if len(ex.TableBody) > 0 {
			examples = append(examples, ex)
		}
	}
	if len(sc.Examples) > 0 {
		sc.Examples = examples
	}
	return true
}

// stepDefinitions emits one stepDefinition per handler the records' steps matched and returns
// their ids by "location pattern".
func (m *msgStream) stepDefinitions(cases []*msgCase) map[string]string {
	ids := map[string]string{}
	for _, c := range cases {
		for _, st := range c.rec.Steps {
			if st.Match == nil || st.Match.Location == "" {
				continue
			}
			key := st.Match.Location + " " + st.Match.Pattern
			if _, ok := ids[key]; ok {
				continue
			}
			ids[key] = m.id()
			ref := &messages.SourceReference{Uri: st.Match.Location}
			if i := strings.LastIndex(st.Match.Location, ":"); i > 0 {
				if n, err := strconv.ParseInt(st.Match.Location[i+1:], 10, 64); err == nil {
					ref = &messages.SourceReference{Uri: st.Match.Location[:i], Location: &messages.Location{Line: n}}
				}
			}
			m.emit(&messages.Envelope{StepDefinition: &messages.StepDefinition{Id: ids[key], SourceReference: ref,
				Pattern: &messages.StepDefinitionPattern{Source: st.Match.Pattern, Type: messages.StepDefinitionPatternType_REGULAR_EXPRESSION}}})
		}
	}
	return ids
}

// needsHook: the scenario's status is not its steps' (cut short, or failed outside them), so
// its test case ends with a hook step that says so.
func needsHook(c *msgCase) bool {
	_, cut := cutShort(c.rec)
	_, outside := failedOutsideSteps(c.rec)
	return cut || outside
}

// testCase emits c's test case: a step per pickle step, with the definition its record step
// matched, and the hook step where needsHook.
func (m *msgStream) testCase(c *msgCase, defs map[string]string, hookID, runID string) {
	c.tc = &messages.TestCase{Id: m.id(), PickleId: c.pickle.Id, TestRunStartedId: runID}
	next := 0
	for _, ps := range c.pickle.Steps {
		j := recordStepOf(c.rec, ps.Text, &next)
		ts := &messages.TestStep{Id: m.id(), PickleStepId: ps.Id}
		if j >= 0 && c.rec.Steps[j].Match != nil {
			mt := c.rec.Steps[j].Match
			ts.StepDefinitionIds = []string{defs[mt.Location+" "+mt.Pattern]}
			ts.StepMatchArgumentsLists = []*messages.StepMatchArgumentsList{{StepMatchArguments: []*messages.StepMatchArgument{}}}
		}
		c.tc.TestSteps = append(c.tc.TestSteps, ts)
		c.steps = append(c.steps, j)
	}
	if needsHook(c) {
		c.tc.TestSteps = append(c.tc.TestSteps, &messages.TestStep{Id: m.id(), HookId: hookID})
		c.steps = append(c.steps, -1)
	}
	m.emit(&messages.Envelope{TestCase: c.tc})
}

// recordStepOf is the index of the record's step for a pickle step's text, from *next on
// (steps are recorded in order), or -1.
func recordStepOf(rec *record.Scenario, text string, next *int) int {
	for j := *next; j < len(rec.Steps); j++ {
		if _, name := stepParts(rec.Steps[j]); name == text || rec.Steps[j].Text == text {
			*next = j + 1
			return j
		}
	}
	return -1
}

// execute emits c's run: started, each step started and finished with its status, duration
// and message, finished. Times are the record's; a step without a start begins where the
// previous one ended.
func (m *msgStream) execute(c *msgCase) {
	startedID := m.id()
	at := c.rec.Start
	m.emit(&messages.Envelope{TestCaseStarted: &messages.TestCaseStarted{Id: startedID, TestCaseId: c.tc.Id, Timestamp: stamp(at)}})
	for i, ts := range c.tc.TestSteps {
		res := m.stepResult(c, c.steps[i], ts.HookId != "")
		if j := c.steps[i]; j >= 0 && !c.rec.Steps[j].Start.IsZero() {
			at = c.rec.Steps[j].Start
		}
		m.emit(&messages.Envelope{TestStepStarted: &messages.TestStepStarted{TestCaseStartedId: startedID, TestStepId: ts.Id, Timestamp: stamp(at)}})
		at = at.Add(messages.DurationToGoDuration(*res.Duration))
		m.emit(&messages.Envelope{TestStepFinished: &messages.TestStepFinished{TestCaseStartedId: startedID, TestStepId: ts.Id, TestStepResult: res, Timestamp: stamp(at)}})
	}
	end := c.rec.End
	if end.Before(at) {
		end = at
	}
	m.emit(&messages.Envelope{TestCaseFinished: &messages.TestCaseFinished{TestCaseStartedId: startedID, Timestamp: stamp(end)}})
}

// stepResult is the result of a test step: its record step's (j), the hook's, or skipped for
// a pickle step the record does not hold.
func (m *msgStream) stepResult(c *msgCase, j int, hook bool) *messages.TestStepResult {
	zero := messages.GoDurationToDuration(0)
	switch {
	case hook:
		if msg, ok := failedOutsideSteps(c.rec); ok {
			return &messages.TestStepResult{Status: messages.TestStepResultStatus_FAILED, Message: msg, Duration: &zero}
		}
		why, _ := cutShort(c.rec)
		return &messages.TestStepResult{Status: messages.TestStepResultStatus_SKIPPED, Message: why, Duration: &zero}
	case j < 0:
		return &messages.TestStepResult{Status: messages.TestStepResultStatus_SKIPPED, Message: "not in the record", Duration: &zero}
	}
	st := c.rec.Steps[j]
	status, msg := ciStepResult(c.rec, st)
	d := messages.GoDurationToDuration(time.Duration(st.DurationMS) * time.Millisecond)
	return &messages.TestStepResult{Status: stepStatus(status), Message: msg, Duration: &d}
}

func stepStatus(s string) messages.TestStepResultStatus {
	switch st := messages.TestStepResultStatus(strings.ToUpper(s)); st {
	case messages.TestStepResultStatus_PASSED, messages.TestStepResultStatus_FAILED, messages.TestStepResultStatus_SKIPPED,
		messages.TestStepResultStatus_UNDEFINED, messages.TestStepResultStatus_PENDING, messages.TestStepResultStatus_AMBIGUOUS:
		return st
	}
	return messages.TestStepResultStatus_UNKNOWN
}

// runSucceeded is the run's exit code 0 where run.json has it, else no selected record that
// fails the run (record.Unexcused).
func runSucceeded(run *record.Run, scen []*record.Scenario) bool {
	if run.ExitCode != nil {
		return *run.ExitCode == 0
	}
	return !slices.ContainsFunc(scen, func(s *record.Scenario) bool { return record.Unexcused(s.Status, s.KnownDefect) })
}

// runEnd is run.json's end, else the last record's.
func runEnd(run *record.Run, scen []*record.Scenario) time.Time {
	if !run.End.IsZero() {
		return run.End
	}
	var end time.Time
	for _, s := range scen {
		if s.End.After(end) {
			end = s.End
		}
	}
	return end
}

func stamp(t time.Time) *messages.Timestamp {
	ts := messages.GoTimeToTimestamp(t)
	return &ts
}
