package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// messagesArchive finishes an archive of p2-16-01 (passed) and p2-16-02 (failed; its step
// error holds a token and an app id) with their feature texts, and returns its folder.
func messagesArchive(t *testing.T) string {
	t.Helper()
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	a, err := Create(t.TempDir(), "p2-16", start, testRedactor())
	require.NoError(t, err)
	sources := map[string][]byte{}
	for _, s := range []*Scenario{sampleScenario("p2-16-01", StatusPassed), sampleScenario("p2-16-02", StatusFailed)} {
		s.Steps[0].Keyword, s.Steps[1].Keyword = "Given", "Then"
		s.Steps[0].Line, s.Steps[1].Line = 5, 6
		sources[s.FeatureFile] = []byte("Feature: P2-16 requests\n\n  @" + s.ID + " @p2-16 @acc-2\n  Scenario: " + s.Name +
			"\n    Given a FAILED run of network-midfail\n    Then exactly one NETWORK_RUN exists\n")
		require.NoError(t, a.WriteScenario(s))
	}
	a.SetFeatureSources(sources)
	exit := 1
	require.NoError(t, a.Finish(&Run{RunnerVersion: "v0.0.0-test", Target: "sandbox", OS: "linux/amd64", ExitCode: &exit, End: start.Add(time.Minute)}))
	return a.Dir()
}

// Issue 43: every archive holds messages.ndjson, written through the archive's redacting
// writer like its other files: the token and the raw app id of a failed step's error are not
// in it, and every line is still one JSON message.
func TestMessagesNDJSONIsRedacted(t *testing.T) {
	dir := messagesArchive(t)
	path := filepath.Join(dir, MessagesFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]", "the failed step's error is there, redacted")
	leaks, err := redact.VerifyFiles([]string{path}, map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": testToken, "KSQL_DB_PASSWORD": testSecret}, []string{"4257", "4258", "4260", "4264"})
	require.NoError(t, err)
	assert.Empty(t, leaks)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	lines := 0
	for sc.Scan() {
		lines++
		assert.True(t, json.Valid(sc.Bytes()), "line %d is JSON after redaction: %s", lines, sc.Text())
	}
	assert.Greater(t, lines, 10)
}

// htmlFormatter is tools/html-formatter's render.mjs with Node, or why the test cannot run it.
func htmlFormatter(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: messages.ndjson was not rendered by @cucumber/html-formatter (install Node.js, then make html-formatter)")
	}
	tool, err := filepath.Abs(filepath.Join("..", "..", "tools", "html-formatter"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(tool, "node_modules", "@cucumber", "html-formatter", "package.json")); err != nil {
		t.Skipf("@cucumber/html-formatter is not installed in %s: messages.ndjson was not rendered (make html-formatter installs it with npm ci)", tool)
	}
	return node, filepath.Join(tool, "render.mjs")
}

// Issue 43: an archive's messages.ndjson renders in Cucumber's own HTML formatter (the npm
// package @cucumber/html-formatter, pinned in tools/html-formatter), and Cucumber's query
// library, which the report's page uses, finds each scenario with its feature, line and
// status. Skipped, saying why, where Node or the package is absent.
func TestMessagesRenderInCucumbersHTMLFormatter(t *testing.T) {
	node, script := htmlFormatter(t)
	dir := messagesArchive(t)
	in, err := os.Open(filepath.Join(dir, MessagesFile))
	require.NoError(t, err)
	defer in.Close()
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), node, script, page)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &stdout, &stderr
	require.NoError(t, cmd.Run(), "render.mjs: %s", stderr.String())

	type found struct {
		Feature, Scenario, URI, Status string
		Line, Steps                    int
		Success                        *bool
	}
	var got []found
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var f found
		require.NoError(t, json.Unmarshal([]byte(l), &f), l)
		got = append(got, f)
	}
	no := false
	assert.Equal(t, []found{
		{Feature: "P2-16 requests", Scenario: "cancel and claim race", URI: "features/p2-16/p2-16-01.feature", Status: "PASSED", Line: 4, Steps: 2},
		{Feature: "P2-16 requests", Scenario: "cancel and claim race", URI: "features/p2-16/p2-16-02.feature", Status: "FAILED", Line: 4, Steps: 2},
		{Success: &no},
	}, got)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(string(html)), "<!DOCTYPE html>"), "an HTML page")
	for _, want := range []string{"cancel and claim race", "P2-16 requests", `"status":"FAILED"`, `"status":"PASSED"`} {
		assert.Contains(t, string(html), want)
	}
}

// `archive merge` takes the feature texts from the shards' messages.ndjson: FeatureSources
// reads back what the archive was handed; an archive without the file has none.
func TestFeatureSourcesReadBackFromTheStream(t *testing.T) {
	dir := messagesArchive(t)
	src, err := FeatureSources(dir)
	require.NoError(t, err)
	require.Len(t, src, 2)
	assert.True(t, strings.HasPrefix(string(src["features/p2-16/p2-16-02.feature"]), "Feature: P2-16 requests\n\n  @p2-16-02 @p2-16 @acc-2\n"))
	require.NoError(t, os.Remove(filepath.Join(dir, MessagesFile)))
	src, err = FeatureSources(dir)
	require.NoError(t, err)
	assert.Empty(t, src)
}
