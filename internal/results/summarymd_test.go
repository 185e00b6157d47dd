package results_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
	"github.com/ksqlflow/flowtest/internal/results/render"
)

// firstLines is the first n lines of an archive's summary.md, as one string.
func firstLines(t *testing.T, dir string, n int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	require.NoError(t, err, "every finished archive has summary.md")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// The job summary of a failing archive shows the failure within its first 30 lines: its
// scenario id, the first failing assertion with what was expected and seen, and a link to its
// record; and it is what render.Summary makes of the archive's records alone.
func TestSummaryShowsTheFailureEarly(t *testing.T) {
	dir := archivetest.Finished(t)
	head := firstLines(t, dir, 30)
	assert.Contains(t, head, "**failed**")
	assert.Contains(t, head, "1 passed, 1 failed, 0 not run, of 2", "README's result line")
	assert.Contains(t, head, "**p2-16-02**")
	assert.Contains(t, head, "NETWORK_RUN count in app=app:state: expected `1`, saw `2`", "the first failing assertion, redacted")
	assert.Contains(t, head, "[scenarios/p2-16-02.json](scenarios/p2-16-02.json)")
	assert.NotContains(t, head, "**p2-16-01**", "a pass is not listed")

	scen, run, err := results.ReadArchive(dir)
	require.NoError(t, err)
	written, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	require.NoError(t, err)
	assert.Equal(t, string(written), string(render.Summary(render.NewView(run, scen, nil))), "summary.md is rendered from the records")
}

// A passing archive's summary says so in its first lines, and lists no failure.
func TestSummaryOfAPassingRun(t *testing.T) {
	a, err := results.Create(t.TempDir(), "p2-16", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), archivetest.Redactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(archivetest.Scenario("p2-16-01", results.StatusPassed)))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: []string{"p2-16-01"}}))
	head := firstLines(t, a.Dir(), 3)
	assert.Contains(t, head, "**passed**")
	assert.Contains(t, head, "1 passed, 0 failed, 0 not run, of 1")
	assert.NotContains(t, firstLines(t, a.Dir(), 100), "## Failures")
}

// summary.md goes through the archive's redactor like every other file: a secret in a failing
// assertion's seen value, a step error or a reason does not reach a CI job summary.
func TestSummaryIsRedacted(t *testing.T) {
	a, err := results.Create(t.TempDir(), "p2-16", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), archivetest.Redactor())
	require.NoError(t, err)
	s := archivetest.Scenario("p2-16-02", results.StatusFailed)
	s.Reason = "step failed with password " + archivetest.Secret
	s.Assertions[0].Seen = "Authorization token " + archivetest.Token + " for app 4258"
	require.NoError(t, a.WriteScenario(s))
	blocked := archivetest.Scenario("p2-16-03", results.StatusBlocked)
	blocked.Assertions = nil
	require.NoError(t, a.WriteScenario(blocked))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: []string{"p2-16-02", "p2-16-03"}}))
	all := firstLines(t, a.Dir(), 1000)
	for _, leak := range []string{archivetest.Token, archivetest.Secret, "4257", "4258"} {
		assert.NotContains(t, all, leak)
	}
	assert.Contains(t, all, "saw `Authorization token [REDACTED:KSQL_FLOWNET_STATE_API_TOKEN] for app app:audit`")
	assert.Contains(t, all, "**p2-16-03** (blocked)")
	assert.Contains(t, all, "step failed `Then exactly one NETWORK_RUN exists`: GET /k/v1/records.json?app=app:state", "without an assertion, the failing step's error")
}
