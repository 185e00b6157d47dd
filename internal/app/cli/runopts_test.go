package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runJSON is what these tests read of an archive's run.json.
type runJSON struct {
	Scenarios []struct {
		ID, Status     string
		Reason         string `json:"status_reason"`
		NotRunCategory string `json:"not_run_category"`
	}
}

func readRunJSON(t *testing.T, dir string) runJSON {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var run runJSON
	require.NoError(t, json.Unmarshal(data, &run))
	return run
}

// run --fail-fast, end to end: a step deadline of 1ms fails the first scenario (its END line
// names the deadline and its flag, once), no other starts, each is reported not run with the
// reason naming the failed one, and the run exits 1.
func TestRunFailFast(t *testing.T) {
	out := t.TempDir()
	r := flowtest(t, nil, "run", "--out", out, "--tags", "@m5", "--fail-fast", "--step-timeout", "1ms", "--concurrency", "1")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, "START "), r.stdout)
	assert.Equal(t, 1, strings.Count(r.stdout, "step deadline --step-timeout 1ms fired: "), r.stdout)
	assert.NotContains(t, r.stdout, "\x1b[", "a pipe gets no colour")
	run := readRunJSON(t, archiveDir(t, r.stdout))
	var failed string
	stopped := 0
	for _, s := range run.Scenarios {
		switch {
		case s.Status == "failed":
			failed = s.ID
		case s.Status == "not-run" && s.NotRunCategory != "tag":
			stopped++
			assert.Equal(t, "--fail-fast: stopped after m5-serial-success failed", s.Reason, s.ID)
		case s.Status == "passed":
			t.Errorf("%s passed under --fail-fast after a failure", s.ID)
		}
	}
	assert.Equal(t, "m5-serial-success", failed)
	assert.Positive(t, stopped)
}

// run --keep-workdirs names each kept dir: a KEPT line per scenario on stdout, inside the run's
// work dir, which the last line on stderr names; both exist after the run.
func TestRunKeepWorkdirsSaysWhere(t *testing.T) {
	r := flowtest(t, nil, "run", "--out", t.TempDir(), "--tags", "@m5-serial-success", "--keep-workdirs")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	_, runDir, ok := strings.Cut(r.stderr, "flowtest: kept the run work dir (unredacted) at ")
	require.True(t, ok, r.stderr)
	runDir, _, _ = strings.Cut(runDir, "\n")
	t.Cleanup(func() { os.RemoveAll(runDir) })
	_, scenDir, ok := strings.Cut(r.stdout, "KEPT  m5-serial-success work dir (unredacted): ")
	require.True(t, ok, r.stdout)
	scenDir, _, _ = strings.Cut(scenDir, "\n")
	assert.DirExists(t, runDir)
	assert.DirExists(t, scenDir)
	assert.True(t, strings.HasPrefix(scenDir, runDir+string(filepath.Separator)), "%s is inside %s", scenDir, runDir)
}
