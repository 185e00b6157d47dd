// Package ciworkflow holds the tests of the CI workflow users copy
// (.github/workflows/acceptance.yml): actionlint finds nothing in it, and its shard matrix,
// the command each shard runs and the merge job's inputs agree. Tests only: the workflow is
// YAML, not Go.
package ciworkflow

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const workflowFile = "../../../.github/workflows/acceptance.yml"

func readWorkflow(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(workflowFile)
	require.NoError(t, err)
	return data
}

// lint runs actionlint as a library over content (shellcheck and pyflakes off: they are
// external programs this machine need not have), with the repository as its project so that
// its own config, if any, applies.
func lint(t *testing.T, content []byte) []string {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	require.NoError(t, err)
	abs, err := filepath.Abs(workflowFile)
	require.NoError(t, err)
	errs, err := l.Lint(abs, content, nil)
	require.NoError(t, err)
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%d:%d: %s [%s]", e.Line, e.Column, e.Message, e.Kind))
	}
	return out
}

func TestWorkflowPassesActionlint(t *testing.T) {
	assert.Empty(t, lint(t, readWorkflow(t)))
}

// A broken workflow fails the lint: the lint is no formality.
func TestActionlintRejectsABrokenWorkflow(t *testing.T) {
	good := string(readWorkflow(t))
	for what, c := range map[string]struct{ old, new, kind string }{
		"unknown matrix key":   {"SHARD: ${{ matrix.shard }}", "SHARD: ${{ matrix.shards }}", "expression"},
		"needs an unknown job": {"needs: sandbox-shard", "needs: sandbox-shards", "job-needs"},
		"unknown job key":      {"    timeout-minutes: 15\n", "    timeout-minute: 15\n", "syntax-check"},
		"bad input reference":  {"GATE: ${{ inputs.gate }}", "GATE: ${{ inputs.gates }}", "expression"},
	} {
		require.Contains(t, good, c.old, what)
		errs := lint(t, []byte(strings.Replace(good, c.old, c.new, 1)))
		assert.True(t, slices.ContainsFunc(errs, func(e string) bool { return strings.HasSuffix(e, "["+c.kind+"]") }), "%s: %v", what, errs)
	}
}

type step struct {
	Name  string            `yaml:"name"`
	Shell string            `yaml:"shell"`
	ID    string            `yaml:"id"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	With  map[string]any    `yaml:"with"`
	Env   map[string]string `yaml:"env"`
}

type job struct {
	Needs       any            `yaml:"needs"`
	Environment string         `yaml:"environment"`
	Concurrency map[string]any `yaml:"concurrency"`
	Strategy    struct {
		Matrix map[string]any `yaml:"matrix"`
	} `yaml:"strategy"`
	Env   map[string]string `yaml:"env"`
	Steps []step            `yaml:"steps"`
}

type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]job    `yaml:"jobs"`
}

func parse(t *testing.T, content []byte) workflow {
	t.Helper()
	var wf workflow
	require.NoError(t, yaml.Unmarshal(content, &wf))
	return wf
}

// agreement lists where the shard count, the command of each shard, the artifacts they
// upload and what the merge job downloads and expects disagree.
func agreement(wf workflow) []string {
	var probs []string
	n, err := strconv.Atoi(wf.Env["FLOWTEST_SHARDS"])
	if err != nil || n < 2 {
		return []string{fmt.Sprintf("env.FLOWTEST_SHARDS %q is not a shard count of at least 2", wf.Env["FLOWTEST_SHARDS"])}
	}
	shards, ok := wf.Jobs["sandbox-shard"]
	if !ok {
		return []string{"no sandbox-shard job"}
	}
	list, _ := shards.Strategy.Matrix["shard"].([]any)
	var got []int
	for _, v := range list {
		k, _ := v.(int)
		got = append(got, k)
	}
	var want []int
	for k := 1; k <= n; k++ {
		want = append(want, k)
	}
	if !slices.Equal(got, want) {
		probs = append(probs, fmt.Sprintf("matrix.shard is %v, FLOWTEST_SHARDS=%d wants %v", got, n, want))
	}
	var ran, uploaded bool
	var uploadName string
	for _, s := range shards.Steps {
		if strings.Contains(s.Run, "flowtest run") {
			ran = true
			if s.Env["SHARD"] != "${{ matrix.shard }}" || !strings.Contains(s.Run, `--shard "$SHARD/$FLOWTEST_SHARDS"`) {
				probs = append(probs, "the shard's run step does not run --shard <matrix.shard>/FLOWTEST_SHARDS")
			}
			// The real product is the judge: the shards drive it, refused as blocked (not
			// fallen back to the reference) where it cannot run.
			if !strings.Contains(s.Run, "--product real") {
				probs = append(probs, "the shard's run step does not drive the real FlowNet (--product real)")
			}
		}
		if strings.HasPrefix(s.Run, "make build") && !strings.Contains(s.Run, "tools") {
			probs = append(probs, "the shard's build step does not install the pinned tools (make build tools): the real FlowNet would be blocked")
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploaded = true
			uploadName, _ = s.With["name"].(string)
		}
	}
	if !ran || !uploaded {
		probs = append(probs, fmt.Sprintf("a shard must run flowtest (%v) and upload its archive (%v)", ran, uploaded))
	}
	merge, ok := wf.Jobs["merge"]
	if !ok {
		return append(probs, "no merge job")
	}
	if merge.Needs != "sandbox-shard" {
		probs = append(probs, fmt.Sprintf("merge needs %v, not sandbox-shard", merge.Needs))
	}
	var pattern string
	var merged, verified, junit, summarized, reported bool
	for _, s := range merge.Steps {
		// The job summary is the archive's summary.md (README.md's head never reached a result).
		if strings.Contains(s.Run, `"$ARCHIVE/summary.md"`) && strings.Contains(s.Run, `"$GITHUB_STEP_SUMMARY"`) {
			summarized = true
		}
		// The JUnit file feeds the test report: an annotation per failed or erroring case.
		if s.Shell == "python" && strings.Contains(s.Run, `"junit.xml"`) && strings.Contains(s.Run, "::error title=") {
			reported = true
		}
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			pattern, _ = s.With["pattern"].(string)
		}
		if strings.Contains(s.Run, "flowtest archive merge") {
			merged = strings.Contains(s.Run, `-ne "$FLOWTEST_SHARDS"`)
		}
		if strings.Contains(s.Run, "flowtest archive verify") {
			verified = true
		}
		if p, _ := s.With["path"].(string); strings.HasSuffix(p, "/junit.xml") && strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			junit = true
		}
	}
	for k := 1; k <= n; k++ {
		name := strings.ReplaceAll(uploadName, "${{ matrix.shard }}", strconv.Itoa(k))
		if ok, err := path.Match(pattern, name); err != nil || !ok {
			probs = append(probs, fmt.Sprintf("the merge job downloads %q, which does not take shard %d's artifact %q", pattern, k, name))
		}
	}
	if !merged {
		probs = append(probs, "the merge step must refuse unless it found FLOWTEST_SHARDS archives")
	}
	if !verified || !junit {
		probs = append(probs, fmt.Sprintf("the merge job must verify the merged archive (%v) and publish its junit.xml (%v)", verified, junit))
	}
	if !summarized || !reported {
		probs = append(probs, fmt.Sprintf("the merge job's summary must be the merged archive's summary.md (%v) and its junit.xml must feed annotations (%v)", summarized, reported))
	}
	return probs
}

func TestShardCountAndMergeInputsAgree(t *testing.T) {
	good := readWorkflow(t)
	assert.Empty(t, agreement(parse(t, good)))

	// The check finds each disagreement.
	for what, c := range map[string]struct{ old, new string }{
		"matrix one short":         {"shard: [1, 2, 3]", "shard: [1, 2]"},
		"count changed alone":      {"FLOWTEST_SHARDS: 3", "FLOWTEST_SHARDS: 4"},
		"artifact renamed":         {"name: flowtest-shard-${{ matrix.shard }}", "name: shard-${{ matrix.shard }}"},
		"merge without the count":  {`-ne "$FLOWTEST_SHARDS"`, `-ne 3`},
		"shard count hard-coded":   {`--shard "$SHARD/$FLOWTEST_SHARDS"`, `--shard "$SHARD/3"`},
		"the reference driven":     {`--product real --shard`, `--shard`},
		"tools not installed":      {"run: make build tools", "run: make build"},
		"README's head as summary": {`cat "$ARCHIVE/summary.md"`, `head -n 80 "$ARCHIVE/README.md"`},
		"JUnit read by nothing":    {`"junit.xml")).getroot()`, `"run.json")).getroot()`},
	} {
		require.Contains(t, string(good), c.old, what)
		assert.NotEmpty(t, agreement(parse(t, bytes.Replace(good, []byte(c.old), []byte(c.new), 1))), what)
	}
}

var secretRef = regexp.MustCompile(`^\$\{\{ secrets\.([A-Z0-9_]+) \}\}$`)

// The live gate: dispatched by hand only, one per tenant at a time, and every token comes from
// the environment's secrets — the same names env.e2e.example documents, none written here.
func TestLiveGateJob(t *testing.T) {
	content := readWorkflow(t)
	wf := parse(t, content)
	live, ok := wf.Jobs["live-gate"]
	require.True(t, ok)
	assert.Equal(t, "${{ inputs.tenant }}", live.Environment)
	assert.Equal(t, "flowtest-live-${{ inputs.tenant }}", live.Concurrency["group"])
	assert.Equal(t, false, live.Concurrency["cancel-in-progress"])

	var passed []string
	for _, s := range live.Steps {
		for k, v := range s.Env {
			if strings.Contains(k, "TOKEN") {
				m := secretRef.FindStringSubmatch(v)
				if assert.NotNil(t, m, "%s must come from the environment's secrets, is %q", k, v) {
					assert.Equal(t, k, m[1])
				}
				passed = append(passed, k)
			}
		}
		if strings.Contains(s.Run, "gate run") {
			assert.Contains(t, s.Run, "--target live")
			assert.NotContains(t, s.Run, "--concurrency")
			assert.Contains(t, s.Run, `cat "$archive/summary.md" >> "$GITHUB_STEP_SUMMARY"`, "the gate archive's summary.md is the job summary")
		}
	}
	// Nowhere else: not at the workflow's or another job's level, where every step would see it.
	for k := range wf.Env {
		assert.NotContains(t, k, "TOKEN")
	}
	for name, j := range wf.Jobs {
		for k := range j.Env {
			assert.NotContains(t, k, "TOKEN", name)
		}
		if name != "live-gate" {
			assert.NotContains(t, fmt.Sprint(j.Steps), "secrets.", name)
		}
	}
	// The tokens env.e2e.example lists, but the production request token (compare-only,
	// never given to a test run).
	f, err := os.Open("../../../env.e2e.example")
	require.NoError(t, err)
	defer f.Close()
	var documented []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, _, ok := strings.Cut(sc.Text(), "=")
		if ok && !strings.HasPrefix(name, "#") && strings.Contains(name, "TOKEN") && name != "KSQL_FLOWNET_REQUEST_API_TOKEN" {
			documented = append(documented, name)
		}
	}
	require.NoError(t, sc.Err())
	slices.Sort(documented)
	slices.Sort(passed)
	assert.Equal(t, documented, passed)
}
