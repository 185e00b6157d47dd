package runner

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
)

// A step whose deadline fires while it waits on a condition (under a longer limit of its own)
// fails saying so, naming the flag that sets the deadline, once: in the record's reason, the
// step, the console, and the archive's pages (issue 43: the failure only said "gave up
// waiting … (limit 10m0s)").
func TestStepDeadlineThatFiresSaysSoOnce(t *testing.T) {
	fsys := selfFeatures(map[string]string{"b/wait.feature": `Feature: waits
  @beta @s1
  Scenario: a step that waits past its deadline
    Given a step that waits for the holder to exit
    Then a step that passes
`})
	delete(fsys, "m/beta.feature")
	items := plan(t, fsys, "@beta")
	r := execute(t, fsys, items, Options{
		StepTimeout: 50 * time.Millisecond, StepTimeoutName: "--step-timeout",
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^a step that waits for the holder to exit$`, func(ctx context.Context) error {
				return wait.Until(ctx, "holder-trial-1 to exit", 10*time.Minute, 5*time.Millisecond,
					func(context.Context) (bool, string, error) { return false, "holder-trial-1 still running", nil })
			})
		},
	})
	var rec *results.Scenario
	for _, s := range r.res.Scenarios {
		if s.ID == "beta" {
			rec = s
		}
	}
	require.NotNil(t, rec)
	assert.Equal(t, results.StatusFailed, rec.Status)
	const said = "step deadline --step-timeout 50ms fired: "
	assert.True(t, strings.HasPrefix(rec.Reason, `step "Given a step that waits for the holder to exit" failed: `+said+"gave up waiting for holder-trial-1 to exit"), rec.Reason)
	assert.Equal(t, 1, strings.Count(rec.Reason, "step deadline"), rec.Reason)
	assert.Equal(t, 1, strings.Count(r.progress.String(), "step deadline"), "the console:\n%s", r.progress.String())
	// The scenario's section of index.html: its first failure, not again as its reason (the
	// summary table's note and the timeline's tooltip are other views of it).
	page := readArchiveFile(t, r.archive, "index.html")
	_, section, _ := strings.Cut(page, `<h3 id="s-beta">`)
	section, _, _ = strings.Cut(section, "<svg")
	assert.Equal(t, 1, strings.Count(section, said), "the section says it once:\n%s", section)
	// junit.xml: the failure's body once (its message attribute is the body's first line).
	var suites struct {
		Cases []struct {
			Failure struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	require.NoError(t, xml.Unmarshal([]byte(readArchiveFile(t, r.archive, "junit.xml")), &suites))
	require.Len(t, suites.Cases, 1)
	assert.Equal(t, 1, strings.Count(suites.Cases[0].Failure.Body, said), suites.Cases[0].Failure.Body)
	assert.Contains(t, suites.Cases[0].Failure.Message, said)
}

func readArchiveFile(t *testing.T, a *results.Archive, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(a.Dir(), name))
	require.NoError(t, err)
	return string(data)
}
