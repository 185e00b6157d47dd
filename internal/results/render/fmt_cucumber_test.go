package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Cucumber JSON format as report tools read it (cucumber-jvm's and cucumber-js's
// json formatter, the one the "cucumber-json" report plugins parse): decoded strictly, so a
// field of ours that is not the format's, or a wrong type, fails.
type cjFeature struct {
	URI         string      `json:"uri"`
	ID          string      `json:"id"`
	Keyword     string      `json:"keyword"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Line        int         `json:"line"`
	Tags        []cjTag     `json:"tags"`
	Elements    []cjElement `json:"elements"`
}

type cjTag struct {
	Name string `json:"name"`
	Line int    `json:"line"`
}

type cjElement struct {
	ID          string   `json:"id"`
	Keyword     string   `json:"keyword"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Line        int      `json:"line"`
	Type        string   `json:"type"`
	Tags        []cjTag  `json:"tags"`
	Steps       []cjStep `json:"steps"`
	Before      []cjHook `json:"before"`
	After       []cjHook `json:"after"`
}

type cjHook struct {
	Match  cjMatch  `json:"match"`
	Result cjResult `json:"result"`
}

type cjStep struct {
	Keyword string   `json:"keyword"`
	Name    string   `json:"name"`
	Line    int      `json:"line"`
	Match   *cjMatch `json:"match"`
	Result  cjResult `json:"result"`
}

type cjMatch struct {
	Location string `json:"location"`
}

type cjResult struct {
	Status       string `json:"status"`
	Duration     int64  `json:"duration"`
	ErrorMessage string `json:"error_message"`
}

// Issue 43: cucumber.json's steps carry their feature-file line (it was 0), their keyword
// with its trailing space, as Cucumber writes it, and match.location, the step definition's
// handler; scenarios outside the selection are absent.
func TestCucumberJSONStepsHaveLinesKeywordsAndMatches(t *testing.T) {
	run, scen, _ := ciFixture(t)
	data, err := Cucumber(run, scen)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var feats []cjFeature
	require.NoError(t, dec.Decode(&feats), "cucumber.json is the Cucumber JSON format")
	require.Len(t, feats, 1)
	f := feats[0]
	assert.Equal(t, ciFeature, f.URI)
	var names []string
	for _, e := range f.Elements {
		names = append(names, e.Name)
		for _, st := range e.Steps {
			assert.Positive(t, st.Line, "%s %s%s has its line", e.Name, st.Keyword, st.Name)
			assert.Contains(t, []string{"Given ", "When ", "Then ", "And ", "But "}, st.Keyword, "%s: %s", e.Name, st.Name)
			assert.NotContains(t, st.Name, st.Keyword, "the name is the text without its keyword")
		}
	}
	assert.Equal(t, []string{"one run succeeds", "a node fails", "a wait of 1 seconds"}, names, "m5-09 was not selected")
	last := f.Elements[1].Steps[2]
	assert.Equal(t, cjStep{Keyword: "Then ", Name: `the run is "FAILED"`, Line: 14, Match: &cjMatch{Location: "internal/steps/kit/runs.go:30"},
		Result: cjResult{Status: "failed", Duration: 50e6, ErrorMessage: "run status: expected FAILED, saw SUCCEEDED"}}, last)
	for _, st := range f.Elements[0].Steps {
		require.NotNil(t, st.Match, st.Name)
		assert.Regexp(t, `^internal/steps/kit/runs\.go:\d+$`, st.Match.Location)
	}
	assert.Nil(t, f.Elements[2].Steps[1].Match, "a step no definition matched has no match")
}
