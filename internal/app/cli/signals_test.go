package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/runner"
)

// Ctrl-C reaches sweep (it used to be caught by the process and ignored, so a live sweep
// --delete could not be stopped): interrupted before it read the target, it deletes and
// writes nothing and exits 130.
func TestSweepHonoursAnInterrupt(t *testing.T) {
	out := t.TempDir()
	sigs := make(chan os.Signal, 1)
	sigs <- os.Interrupt // Ctrl-C as the sweep starts
	var o, e bytes.Buffer
	code := Main([]string{"sweep", "--out", out, "--features", filepath.Join(repoRoot(), "features"),
		"--sandbox-bin", filepath.Join(binDir, "flowsandbox"+exe())}, nil, &o, &e, sigs)
	assert.Equal(t, runner.ExitInterrupted, code, o.String()+e.String())
	assert.Contains(t, e.String(), "flowtest sweep: interrupted")
	var written []string
	require.NoError(t, filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			written = append(written, p)
		}
		return err
	}))
	assert.Empty(t, written, "an interrupted sweep writes no record")
}

// list applies run's check of the tag expression: a tag no scenario carries (a typo of
// @m5) is refused with the closest tags, as run refuses it, instead of an empty list.
func TestListRefusesAnUnknownTagAsRunDoes(t *testing.T) {
	features := filepath.Join(repoRoot(), "features")
	var lo, le bytes.Buffer
	assert.Equal(t, runner.ExitRefused, Main([]string{"list", "--tags", "@m55", "--features", features}, nil, &lo, &le, nil), lo.String())
	assert.Contains(t, le.String(), "no scenario carries @m55 (closest: @m5")
	assert.Empty(t, lo.String(), "nothing listed")

	var ro, re bytes.Buffer
	assert.Equal(t, runner.ExitRefused, Main([]string{"run", "--dry-run", "--tags", "@m55", "--features", features}, nil, &ro, &re, nil))
	assert.Contains(t, re.String(), "no scenario carries @m55 (closest: @m5", "run refuses it in the same words")

	// An expression of known tags that selects nothing is listed: it shows what run refuses.
	var eo, ee bytes.Buffer
	assert.Equal(t, 0, Main([]string{"list", "--tags", "@m5 and @m6", "--features", features}, nil, &eo, &ee, nil), ee.String())
	assert.Contains(t, eo.String(), "0 of ")
}

// A negative count of explore is refused naming the flag (--shrink-runs -1 was accepted and
// shrank nothing); so is one of the run flags it forwards.
func TestExploreRefusesNegativeCounts(t *testing.T) {
	for flagName, value := range map[string]string{"shrink-runs": "-1", "bound": "-3", "schedules": "-2", "depth": "-1", "concurrency": "-4"} {
		var o, e bytes.Buffer
		code := Main([]string{"explore", "m5-serial-success", "--" + flagName, value, "--features", filepath.Join(repoRoot(), "features")}, nil, &o, &e, nil)
		assert.Equal(t, runner.ExitRefused, code, "--%s %s: %s", flagName, value, e.String())
		assert.Contains(t, e.String(), flagName, "the refusal names --%s", flagName)
		assert.Contains(t, e.String(), value)
	}
}

// check judges the concurrency the run will use: on the sandbox without a configured one,
// the default (check said 1 while run used 6).
func TestCheckShowsTheConcurrencyTheRunUses(t *testing.T) {
	if _, set := os.LookupEnv("FLOWTEST_CONCURRENCY"); set {
		t.Skip("FLOWTEST_CONCURRENCY is set in this environment")
	}
	var o, e bytes.Buffer
	Main([]string{"check", "--tags", "@m5-serial-success", "--features", filepath.Join(repoRoot(), "features")}, nil, &o, &e, nil)
	m := regexp.MustCompile(`(?m)^PASS +concurrency +--concurrency +(\d+)`).FindStringSubmatch(o.String())
	require.NotNil(t, m, o.String()+e.String())
	assert.Equal(t, strconv.Itoa(defaultConcurrency()), m[1])
}
