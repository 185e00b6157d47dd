package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	messages "github.com/cucumber/messages/go/v34"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeMessages reads an NDJSON stream strictly: every line one Envelope of exactly one
// message, no field the protocol does not have.
func decodeMessages(t *testing.T, data []byte) []*messages.Envelope {
	t.Helper()
	var out []*messages.Envelope
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e messages.Envelope
		require.NoError(t, dec.Decode(&e), "line %d: %s", n, sc.Text())
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &fields))
		require.Len(t, fields, 1, "line %d holds one message", n)
		out = append(out, &e)
	}
	require.NoError(t, sc.Err())
	return out
}

func kindOf(t *testing.T, e *messages.Envelope) string {
	data, err := json.Marshal(e)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &fields))
	for k := range fields {
		return k
	}
	return ""
}

// Issue 43: messages.ndjson is a Cucumber Messages stream in the protocol's order, every
// reference resolving (test case → pickle, test step → pickle step and step definition,
// started → case, finished → started); the selection's scenarios only, their steps' statuses
// and durations as recorded.
func TestMessagesStreamOfARun(t *testing.T) {
	run, scen, sources := ciFixture(t)
	data, err := Messages(run, scen, sources)
	require.NoError(t, err)
	env := decodeMessages(t, data)
	var kinds []string
	for _, e := range env {
		if k := kindOf(t, e); len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"meta", "source", "gherkinDocument", "pickle", "stepDefinition", "hook", "testRunStarted", "testCase",
		"testCaseStarted", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testCaseFinished",
		"testCaseStarted", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testCaseFinished",
		"testCaseStarted", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testStepStarted", "testStepFinished", "testCaseFinished",
		"testRunFinished"}, kinds)

	pickles, pickleSteps, defs, hooks := map[string]*messages.Pickle{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	cases, started := map[string]*messages.TestCase{}, map[string]string{}
	status := map[string][]messages.TestStepResultStatus{} // pickle name → its steps' statuses
	message, nanos := map[string][]string{}, map[string][]int64{}
	for _, e := range env {
		switch {
		case e.Meta != nil:
			assert.Equal(t, MessagesProtocol, e.Meta.ProtocolVersion)
			assert.Equal(t, "flowtest", e.Meta.Implementation.Name)
		case e.GherkinDocument != nil:
			var names []string
			for _, ch := range e.GherkinDocument.Feature.Children {
				if ch.Scenario != nil {
					names = append(names, ch.Scenario.Name)
					for _, ex := range ch.Scenario.Examples {
						assert.Equal(t, "short", ex.Name, "the long Examples block (m5-04) was not selected")
					}
				}
			}
			assert.Equal(t, []string{"one run succeeds", "a node fails", "a wait of <n> seconds"}, names, "m5-09 was not selected")
		case e.Pickle != nil:
			pickles[e.Pickle.Id] = e.Pickle
			for _, ps := range e.Pickle.Steps {
				pickleSteps[ps.Id] = true
			}
		case e.StepDefinition != nil:
			defs[e.StepDefinition.Id] = true
			assert.Equal(t, "internal/steps/kit/runs.go", e.StepDefinition.SourceReference.Uri)
			assert.Positive(t, e.StepDefinition.SourceReference.Location.Line)
		case e.Hook != nil:
			hooks[e.Hook.Id] = true
		case e.TestCase != nil:
			require.Contains(t, pickles, e.TestCase.PickleId)
			for _, ts := range e.TestCase.TestSteps {
				if ts.HookId != "" {
					assert.True(t, hooks[ts.HookId])
					continue
				}
				assert.True(t, pickleSteps[ts.PickleStepId])
				for _, d := range ts.StepDefinitionIds {
					assert.True(t, defs[d], "step definition %s declared", d)
				}
			}
			cases[e.TestCase.Id] = e.TestCase
		case e.TestCaseStarted != nil:
			require.Contains(t, cases, e.TestCaseStarted.TestCaseId)
			started[e.TestCaseStarted.Id] = pickles[cases[e.TestCaseStarted.TestCaseId].PickleId].Name
		case e.TestStepFinished != nil:
			name, ok := started[e.TestStepFinished.TestCaseStartedId]
			require.True(t, ok)
			res := e.TestStepFinished.TestStepResult
			status[name] = append(status[name], res.Status)
			message[name] = append(message[name], res.Message)
			nanos[name] = append(nanos[name], res.Duration.Seconds*1e9+res.Duration.Nanos)
		case e.TestRunFinished != nil:
			assert.False(t, e.TestRunFinished.Success, "the run's exit code was 1")
			assert.Empty(t, e.TestRunFinished.Message, "no scenario was left out for want of its text")
		}
	}
	assert.Len(t, pickles, 3)
	assert.Equal(t, map[string][]messages.TestStepResultStatus{
		"one run succeeds":    {"PASSED", "PASSED", "PASSED"},
		"a node fails":        {"PASSED", "PASSED", "FAILED"},
		"a wait of 1 seconds": {"SKIPPED", "SKIPPED", "SKIPPED"}, // and the hook saying why
	}, status)
	assert.Equal(t, []string{"", "", "run status: expected FAILED, saw SUCCEEDED"}, message["a node fails"])
	assert.Equal(t, []string{"", "", "not-run: not implemented"}, message["a wait of 1 seconds"], "the hook step says why it did not run")
	assert.Equal(t, []int64{100e6, 900e6, 50e6}, nanos["one run succeeds"], "the recorded durations")
}

// A selected scenario whose feature text is not at hand (an archive merged from shards that
// did not keep it) is left out, and the run's end says how many.
func TestMessagesCountWhatHasNoSource(t *testing.T) {
	run, scen, _ := ciFixture(t)
	data, err := Messages(run, scen, nil)
	require.NoError(t, err)
	env := decodeMessages(t, data)
	last := env[len(env)-1].TestRunFinished
	require.NotNil(t, last)
	assert.Equal(t, "3 selected scenarios left out: their feature file's text was not at hand", last.Message)
}

// MessagesProtocol names the version of github.com/cucumber/messages/go that go.mod requires.
func TestMessagesProtocolIsTheModuleVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`github\.com/cucumber/messages/go/v\d+ v(\S+)`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod requires github.com/cucumber/messages/go")
	assert.Equal(t, string(m[1]), MessagesProtocol)
}
