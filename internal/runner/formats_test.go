package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// Issue 42: a process that prints its token on stderr fails its step with that stderr; the
// archive showed [REDACTED:…] while the --format junit, cucumber and pretty files held the raw
// token. Every format file now passes the archive's redactor and holds no leak. Issue 43: so
// do godog's events stream (NDJSON, still one event a line) and the archive's own
// messages.ndjson.
func TestFormatFilesAreRedacted(t *testing.T) {
	const token = "Wr1ter-T0ken-9f8e7d6c5b4a"
	fsys := selfFeatures(map[string]string{"t/token.feature": `Feature: token
  @epsilon @s1
  Scenario: the writer shows its token
    Given a step that passes
    When the writer runs
`})
	items := plan(t, fsys, "@epsilon or @beta")
	out := t.TempDir()
	formats := []string{"junit:" + filepath.Join(out, "junit.xml"), "cucumber:" + filepath.Join(out, "cucumber.json"), "pretty:" + filepath.Join(out, "pretty.txt"),
		"events:" + filepath.Join(out, "events.ndjson")}
	red := redact.New(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": token}, nil)
	arch, err := results.Create(t.TempDir(), "self", time.Now(), red)
	require.NoError(t, err)
	var progress bytes.Buffer
	res := Execute(t.Context(), Options{Features: fsys, Items: items, WorkRoot: t.TempDir(), Archive: arch, Run: &results.Run{Target: "self-test"},
		Progress: &progress, Formats: formats,
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^the writer runs$`, func() error {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "FLOWTEST_SELFTEST_CHILD=print-token", "FLOWTEST_SELFTEST_TOKEN="+token)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				return fmt.Errorf("writer: %v: stderr: %s", err, stderr.String())
			})
		}})
	require.Equal(t, ExitFailed, res.Code, progress.String())

	var want []string
	for _, id := range []string{"beta", "epsilon"} {
		for _, f := range []string{"junit.xml", "cucumber.json", "pretty.txt", "events.ndjson"} {
			ext := filepath.Ext(f)
			want = append(want, filepath.Join(out, strings.TrimSuffix(f, ext)+"-"+id+ext))
		}
	}
	assert.ElementsMatch(t, want, res.FormatFiles)
	for _, p := range res.FormatFiles {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		if strings.Contains(p, "epsilon") {
			assert.Contains(t, string(data), "[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]", p)
		}
		assert.NotContains(t, string(data), token, p)
		if strings.HasSuffix(p, ".ndjson") {
			for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				assert.True(t, json.Valid([]byte(line)), "%s line %d is one JSON event: %s", p, i+1, line)
			}
		}
	}
	stream := filepath.Join(arch.Dir(), results.MessagesFile)
	data, err := os.ReadFile(stream)
	require.NoError(t, err)
	assert.Contains(t, string(data), "[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]", "the failed step's message, redacted")
	leaks, err := redact.VerifyFiles(append([]string{stream}, res.FormatFiles...), map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": token}, nil)
	require.NoError(t, err)
	assert.Empty(t, leaks)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, len(want), "nothing else (no temporary file) is left beside them")
}

// A format file that cannot be published fails the run and says which.
func TestFormatFileThatCannotBeWrittenFailsTheRun(t *testing.T) {
	fsys := selfFeatures(nil)
	out := t.TempDir()
	dest := filepath.Join(out, "junit-delta.xml")
	require.NoError(t, os.Mkdir(dest, 0o755)) // a directory where the file should go
	r := execute(t, fsys, plan(t, fsys, "@delta"), Options{Formats: []string{"junit:" + filepath.Join(out, "junit.xml")}})
	assert.Equal(t, ExitFailed, r.res.Code)
	assert.Contains(t, r.progress.String(), "ERROR writing a format file: --format junit:"+dest)
	assert.Empty(t, r.res.FormatFiles)
}
