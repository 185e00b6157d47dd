package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/coverage"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// coverageArchive writes a finished archive of one scenario that ran with the given
// assertions' subjects, with the tag expression of its run, created at at.
func coverageArchive(t *testing.T, out, tags string, at time.Time, subjects ...[]string) string {
	t.Helper()
	a, err := results.Create(out, "cov", at, redact.New(nil, nil))
	require.NoError(t, err)
	a.SetOrder([]string{"m5-a"})
	start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
	s := &results.Scenario{SchemaVersion: results.SchemaVersion, ID: "m5-a", Feature: "f", Series: "m5", Tags: []string{"@m5-a"},
		Status: results.StatusPassed, Start: start, End: start.Add(time.Second), DurationMS: 1000,
		Steps: []results.Step{{Text: "a step", Keyword: "Then ", Status: "passed"}}}
	for _, sub := range subjects {
		s.Assertions = append(s.Assertions, results.Assertion{What: "w", Expected: "1", Seen: "1", OK: true, Subjects: sub})
	}
	require.NoError(t, a.WriteScenario(s))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", TagExpression: tags, RunOrder: []string{"m5-a"}, End: time.Now()}))
	return a.Dir()
}

// `flowtest coverage --json` decodes into the map: the newest full-run archive is read (not a
// newer tagged one), its subjects' readers and docs/coverage.md's reasons are there, it
// matches its schema, and an unread subject without a reason makes it exit 1.
func TestCoverageCommandReadsTheNewestFullRun(t *testing.T) {
	out := t.TempDir()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.Local)
	full := coverageArchive(t, out, "", at, []string{"state.NETWORK_RUN.status"}, []string{"process.exit-code", `text.any:"Error ["`})
	probs, err := results.ValidateArchive(full)
	require.NoError(t, err)
	assert.Empty(t, probs, "a record's subjects, a quoted text head among them, match the scenario schema")
	coverageArchive(t, out, "@m5-a", at.Add(time.Minute), []string{"request.request_state"})
	features := filepath.Join("..", "..", "..", "features")
	var o, e bytes.Buffer
	code := Main([]string{"coverage", "--out", out, "--features", features, "--json"}, nil, &o, &e, nil)
	assert.Equal(t, 1, code, "most subjects are unread in a one-scenario archive: %s", e.String())
	probs, err = results.ValidateJSON(results.SchemaCoverage, "coverage.json", o.Bytes())
	require.NoError(t, err)
	assert.Empty(t, probs)
	var m coverage.Map
	require.NoError(t, json.Unmarshal(o.Bytes(), &m))
	assert.Equal(t, full, m.Archive)
	assert.Equal(t, 2, m.Read)
	byName := map[string]coverage.Entry{}
	for _, s := range m.Subjects {
		byName[s.Name] = s
	}
	assert.Equal(t, []string{"m5-a"}, byName["state.NETWORK_RUN.status"].Scenarios)
	assert.Empty(t, byName["request.request_state"].Scenarios, "the tagged archive was read")
	assert.NotEmpty(t, byName["text.plan:\"Business key: \""].Reason, "docs/coverage.md's reason")
	assert.True(t, slices.Contains(m.Undocumented, "state.NETWORK_RUN.run_id"))
	require.Len(t, m.Observed, 1)

	o.Reset()
	code = Main([]string{"coverage", "--archive", full, "--features", features}, nil, &o, &e, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, o.String(), "read    state.NETWORK_RUN.status: m5-a\n")
	assert.Contains(t, o.String(), "UNREAD  state.NETWORK_RUN.run_id: ")
}

// Without a full-run archive the command refuses, naming what it looked for.
func TestCoverageCommandWithoutAFullRun(t *testing.T) {
	out := t.TempDir()
	coverageArchive(t, out, "@m5-a", time.Now())
	var o, e bytes.Buffer
	assert.Equal(t, 2, Main([]string{"coverage", "--out", out}, nil, &o, &e, nil))
	assert.True(t, strings.Contains(e.String(), "no full-run archive under"), e.String())
}

// A full run's archive carries coverage.json, through the archive's writer; a tagged run's
// does not.
func TestWriteCoverageOnlyForAFullRun(t *testing.T) {
	features := filepath.Join("..", "..", "..", "features")
	for _, tags := range []string{"", "@m5"} {
		a, err := results.Create(t.TempDir(), "w", time.Now(), redact.New(nil, nil))
		require.NoError(t, err)
		run := &results.Run{TagExpression: tags, Totals: results.Totals{Total: 1, Passed: 1}}
		var o bytes.Buffer
		require.NoError(t, writeCoverage(&o, a, run, nil, features))
		files, _ := filepath.Glob(filepath.Join(a.Dir(), results.CoverageFile))
		assert.Equal(t, tags == "", len(files) == 1, "tags %q", tags)
		assert.Equal(t, tags == "", strings.HasPrefix(o.String(), "coverage: 0 of "), o.String())
	}
}
