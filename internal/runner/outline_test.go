package runner

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each Examples block of a Scenario Outline carries its own manifest id: the runner runs only
// that row, and its step records carry the row's values, not the <placeholders>.
func TestOutlineRowsAreScenariosOfTheirOwn(t *testing.T) {
	fsys := fstest.MapFS{
		"manifest.yaml": {Data: []byte(`schema_version: 1
scenarios:
  - {id: row-pass, series: o1}
  - {id: row-fail, series: o1}
`)},
		"o/outline.feature": {Data: []byte(`Feature: rows
  @o1
  Scenario Outline: a row <what>
    Given a step that passes
    When a step that <what>

    @row-pass
    Examples:
      | what   |
      | passes |

    @row-fail
    Examples:
      | what  |
      | fails |
`)},
	}
	items := plan(t, fsys, "")
	require.Len(t, items, 2)
	for _, it := range items {
		require.NotNil(t, it.Feature, it.ID)
		assert.EqualValues(t, 3, it.Feature.Line, "godog selects by the Outline's line")
	}
	assert.EqualValues(t, 10, items[0].Feature.Row)
	assert.EqualValues(t, 15, items[1].Feature.Row)
	assert.Equal(t, []string{"Given a step that passes", "When a step that fails"}, items[1].Feature.StepText)

	r := execute(t, fsys, items, Options{})
	assert.Equal(t, map[string]string{"row-pass": "passed", "row-fail": "failed"}, statuses(r.res))
	pass := r.res.Scenarios[0]
	require.Len(t, pass.Steps, 2, "only its own row ran")
	assert.Equal(t, "When a step that passes", pass.Steps[1].Text)
	assert.Equal(t, "passed", pass.Steps[1].Status)
}

// The extended series are marked on their entries and listed apart from the acceptance
// scenarios.
func TestExtendedSeriesAreListedApart(t *testing.T) {
	m, err := ParseManifest("m.yaml", []byte("schema_version: 1\nextended: [x]\nscenarios:\n  - {id: a, series: s}\n  - {id: b, series: x}\n"))
	require.NoError(t, err)
	assert.False(t, m.Scenarios[0].Extended)
	assert.True(t, m.Scenarios[1].Extended)
	assert.Equal(t, 1, m.Acceptance())
	var out strings.Builder
	WriteList(&out, Plan(m, nil, Selection{GOOS: "linux"}))
	text := out.String()
	head, tail, ok := strings.Cut(text, "Extended series")
	require.True(t, ok, text)
	assert.Regexp(t, `(?m)^1\s+a\s+s\s`, head)
	assert.NotContains(t, head, " b ")
	assert.Regexp(t, `(?m)^2\s+b\s+x\s`, tail)
}
