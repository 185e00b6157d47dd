package render

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Cucumber JSON, the subset CI report tools read.
type CucumberFeature struct {
	URI      string     `json:"uri"`
	ID       string     `json:"id"`
	Keyword  string     `json:"keyword"`
	Name     string     `json:"name"`
	Line     int        `json:"line"`
	Elements []cukeScen `json:"elements"`
	Tags     []cukeTag  `json:"tags"`
	Desc     string     `json:"description"`
}

type cukeScen struct {
	ID      string     `json:"id"`
	Keyword string     `json:"keyword"`
	Name    string     `json:"name"`
	Desc    string     `json:"description,omitempty"`
	Line    int        `json:"line"`
	Type    string     `json:"type"`
	Tags    []cukeTag  `json:"tags"`
	Steps   []cukeStep `json:"steps"`
	After   []cukeHook `json:"after,omitempty"`
}

// cukeHook is a hook result of a scenario (Cucumber JSON's "before"/"after" arrays).
type cukeHook struct {
	Match  map[string]string `json:"match"`
	Result cukeResult        `json:"result"`
}

type cukeTag struct {
	Name string `json:"name"`
	Line int    `json:"line"`
}

type cukeStep struct {
	Keyword string     `json:"keyword"`
	Name    string     `json:"name"`
	Line    int        `json:"line"`
	Match   *cukeMatch `json:"match,omitempty"`
	Result  cukeResult `json:"result"`
}

// cukeMatch is the step definition a step ran, as "file:line" of its handler.
type cukeMatch struct {
	Location string `json:"location"`
}

type cukeResult struct {
	Status   string `json:"status"`
	Duration int64  `json:"duration,omitempty"` // nanoseconds
	Error    string `json:"error_message,omitempty"`
}

// Cucumber renders cucumber.json from the records written (redacted already), save those of
// the scenarios run's selection left out: they were never meant to run.
func Cucumber(run *record.Run, scen []*record.Scenario) ([]byte, error) {
	scen = selectedRecords(run, scen)
	byFeature := map[string]*CucumberFeature{}
	var order []string
	for _, s := range scen {
		key := s.FeatureFile
		if key == "" {
			key = s.Feature
		}
		f, ok := byFeature[key]
		if !ok {
			f = &CucumberFeature{URI: key, ID: slug(s.Feature), Keyword: "Feature", Name: s.Feature, Line: 1, Tags: []cukeTag{}}
			byFeature[key] = f
			order = append(order, key)
		}
		name := s.Name
		if name == "" {
			name = s.ID
		}
		cs := cukeScen{ID: slug(s.Feature) + ";" + slug(name), Keyword: "Scenario", Name: name, Line: s.Line, Type: "scenario", Tags: []cukeTag{}, Steps: []cukeStep{}}
		for _, t := range s.Tags {
			if !strings.HasPrefix(t, "@") {
				t = "@" + t
			}
			cs.Tags = append(cs.Tags, cukeTag{Name: t, Line: s.Line})
		}
		for _, st := range s.Steps {
			status, msg := ciStepResult(s, st)
			kw, name := stepParts(st)
			cs.Steps = append(cs.Steps, cukeStep{Keyword: kw, Name: name, Line: st.Line, Match: cukeMatchOf(st),
				Result: cukeResult{Status: status, Duration: st.DurationMS * int64(time.Millisecond), Error: msg}})
		}
		if why, cut := cutShort(s); cut {
			cs.Desc = "flowtest status: " + why
			cs.After = append(cs.After, cukeHook{Match: map[string]string{"location": "flowtest:" + s.Status},
				Result: cukeResult{Status: "skipped", Error: why}})
		}
		if msg, ok := failedOutsideSteps(s); ok {
			cs.Steps = append(cs.Steps, cukeStep{Keyword: "After ", Name: "hook", Result: cukeResult{Status: "failed", Error: msg}})
		}
		f.Elements = append(f.Elements, cs)
	}
	out := make([]*CucumberFeature, 0, len(order))
	for _, k := range order {
		out = append(out, byFeature[k])
	}
	return json.Marshal(out)
}

// stepParts splits a step into its keyword (with the space after it) and its text. The
// runner records the whole line as the text ("And the run is …") with the keyword beside it
// ("And"); older records hold the text without the keyword.
func stepParts(st record.Step) (keyword, text string) {
	kw := strings.TrimSpace(st.Keyword)
	if kw != "" && strings.HasPrefix(st.Text, kw+" ") {
		return kw + " ", strings.TrimPrefix(st.Text, kw+" ")
	}
	if kw != "" {
		return kw + " ", st.Text
	}
	return "", st.Text
}

// cutShort says whether s is blocked, interrupted or a selected scenario not run, with its
// reason as "<status>: …". Those are neither passed nor failed, and Cucumber's formats have no
// such status: the step that was cut short (and every later one) is skipped with the reason
// as its message (ciStepResult), and an after hook says which it was. Without the hook a
// scenario of no step (not implemented) reads as a pass, and its reason is lost.
func cutShort(s *record.Scenario) (why string, cut bool) {
	if s.Status != record.StatusBlocked && s.Status != record.StatusInterrupted && s.Status != record.StatusNotRun {
		return "", false
	}
	why = s.Reason
	if !strings.HasPrefix(why, s.Status+":") {
		why = strings.TrimSpace(s.Status + ": " + why)
	}
	return why, true
}

// ciStepResult is the status ("passed", "failed", "skipped", …) and message of a step of s
// in Cucumber's formats: a step of a scenario cut short that did not pass is skipped.
func ciStepResult(s *record.Scenario, st record.Step) (status, msg string) {
	status, msg = st.Status, st.Error
	if status == "" {
		status = "skipped"
	}
	if _, cut := cutShort(s); cut && status != "passed" {
		if status == "failed" && !strings.HasPrefix(msg, s.Status+":") {
			msg = strings.TrimSpace(s.Status + ": " + msg)
		}
		status = "skipped"
	}
	return status, msg
}

// failedOutsideSteps is the message of a scenario that failed with no failed step (cleanup,
// After hook, the checks after the steps): it must not look green in a format that derives
// the scenario's status from its steps.
func failedOutsideSteps(s *record.Scenario) (msg string, ok bool) {
	if s.Status != record.StatusFailed || anyStepFailed(s) {
		return "", false
	}
	msg = s.Reason
	if !s.Cleanup.OK {
		msg = strings.TrimSpace("cleanup failed: " + s.Cleanup.Error + " " + msg)
	}
	return mdtext.OrDash(msg), true
}

func cukeMatchOf(st record.Step) *cukeMatch {
	if st.Match == nil || st.Match.Location == "" {
		return nil
	}
	return &cukeMatch{Location: st.Match.Location}
}

func anyStepFailed(s *record.Scenario) bool {
	for _, st := range s.Steps {
		if st.Status == "failed" {
			return true
		}
	}
	return false
}

func slug(s string) string { return strings.ToLower(record.SanitizeLabel(s)) }
