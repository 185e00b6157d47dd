package render

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// The record says which FlowNet ran: a reference run is marked as flowtest's model, a real
// one names its package, version and Node.
func TestRecordNamesTheProduct(t *testing.T) {
	for _, c := range []struct {
		product *record.Product
		want    string
	}{
		{&record.Product{Kind: record.ProductReference, Source: "sandbox"}, "reference FlowNet (flowtest's model, not the product)"},
		{&record.Product{Kind: record.ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Node: "22.23.5"}, "@rex0220/ksql-flownet@1.0.0 (pinned, node 22.23.5)"},
	} {
		v := NewView(&record.Run{Product: c.product}, nil, nil)
		require.Contains(t, string(Readme(v)), "- Product: **"+c.want+"**")
		page, err := Index(v)
		require.NoError(t, err)
		require.Contains(t, string(page), html.EscapeString(c.want))
	}
	require.NotContains(t, string(Readme(NewView(&record.Run{}, nil, nil))), "Product:")
}

// The two cautions of a run show in README.md and index.html alike, and only when they hold:
// a run of the reference tested flowtest's model, and a run without a SUT commit cannot name
// the product it tested.
func TestRecordCautions(t *testing.T) {
	reference := &record.Product{Kind: record.ProductReference, Source: "sandbox"}
	real := &record.Product{Kind: record.ProductReal, Source: "pinned", Package: "p", Version: "1"}
	for _, c := range []struct {
		name                string
		product             *record.Product
		commit              string
		sandbox, sutUnknown bool
	}{
		{"reference, no commit", reference, "", true, true},
		{"reference, commit", reference, "c1c1", true, false},
		{"real, no commit", real, "", false, true},
		{"real, commit", real, "c1c1", false, false},
		{"no product recorded", nil, "c1c1", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := NewView(&record.Run{Product: c.product, SUT: record.SUTIdentity{Commit: c.commit}}, nil, nil)
			readme := string(Readme(v))
			page, err := Index(v)
			require.NoError(t, err)
			assert.Equal(t, c.sandbox, contains(readme, "- **"+sandboxBanner+"**"), "README sandbox banner")
			assert.Equal(t, c.sandbox, contains(string(page), "<b>"+sandboxBanner+"</b>"), "index.html sandbox banner")
			assert.Equal(t, c.sutUnknown, contains(readme, "- **"+sutUnknownBanner+"**"), "README SUT banner")
			assert.Equal(t, c.sutUnknown, contains(string(page), "<b>"+sutUnknownBanner+"</b>"), "index.html SUT banner")
		})
	}
}

// The header names the flowtest build and the features digest when the run recorded them.
func TestRecordNamesTheBuildAndDigest(t *testing.T) {
	digest := "sha256:" + strings64("ab")
	for _, c := range []struct {
		build *record.FlowtestBuild
		want  string
	}{
		{&record.FlowtestBuild{Version: "1.2.0", Commit: "0123abcd"}, "1.2.0, commit 0123abcd"},
		{&record.FlowtestBuild{Version: "1.2.0", Commit: "0123abcd", Modified: true}, "1.2.0, commit 0123abcd with uncommitted changes"},
		{&record.FlowtestBuild{Version: "1.2.0"}, "1.2.0, commit unknown"},
	} {
		v := NewView(&record.Run{Flowtest: c.build, FeaturesDigest: digest}, nil, nil)
		assert.Contains(t, string(Readme(v)), "- flowtest: "+c.want+"\n- Features digest: `"+digest+"`\n")
		page, err := Index(v)
		require.NoError(t, err)
		assert.Contains(t, string(page), `<p class="muted">flowtest `+c.want+` · features <code>`+digest+`</code></p>`)
	}
	v := NewView(&record.Run{}, nil, nil)
	assert.NotContains(t, string(Readme(v)), "flowtest:")
	assert.NotContains(t, string(Readme(v)), "Features digest")
	page, err := Index(v)
	require.NoError(t, err)
	assert.NotContains(t, string(page), "features <code>")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func strings64(pair string) string { return strings.Repeat(pair, 32) }

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// glanceRun is a run of three scenarios: one passed, one failed by an assertion that its
// step error and the runner's reason repeat, one failed by a hook with processes that all
// exited 0; and the evidence rows of the first two.
func glanceRun() (*record.Run, []*record.Scenario) {
	lines := make([]string, 30)
	for i := range lines {
		lines[i] = fmt.Sprintf("out line %02d", i+1)
	}
	passed := &record.Scenario{ID: "g-pass", Status: record.StatusPassed, Start: t0, End: t0.Add(time.Second),
		// godog's text may hold the keyword too: it is shown once.
		Steps:      []record.Step{{Keyword: "Given ", Text: "a network", Status: "passed"}, {Keyword: "Then", Text: "Then it ran once", Status: "passed"}},
		Assertions: []record.Assertion{{What: "runs of the network", Expected: "EXPECTED-ONE", Seen: "SEEN-ONE", OK: true}}}
	bad := record.Assertion{What: "count of runs", Expected: "ONE-RUN", Seen: "SEVEN-RUNS"}
	badText := "count of runs: expected ONE-RUN, saw SEVEN-RUNS"
	failed := &record.Scenario{ID: "g-fail", Status: record.StatusFailed, Start: t0, End: t0.Add(time.Second),
		Reason: `step "it ran once" failed: reading runs: ` + badText, Cleanup: record.Cleanup{OK: true},
		Steps: []record.Step{{Keyword: "Given ", Text: "a network", Status: "passed"},
			{Keyword: "Then ", Text: "it ran once", Status: "failed", Error: "reading runs: " + badText}},
		Assertions: []record.Assertion{{What: "the network exists", Expected: "yes", Seen: "yes", OK: true}, bad},
		Processes: []record.Process{{Name: "first run", Argv: []string{"flownet", "run-network"}, ExitCode: new(0), StdoutTail: "QUIET-OUTPUT\n"},
			{Name: "second run", Argv: []string{"flownet", "run-network"}, ExitCode: new(3), StderrTail: "Error [KSQL_FAILED]\n"}}}
	hook := &record.Scenario{ID: "g-hook", Status: record.StatusFailed, Start: t0, End: t0.Add(time.Second),
		Reason: "After hook: leftover process", Cleanup: record.Cleanup{OK: true},
		Steps:     []record.Step{{Keyword: "Given ", Text: "a network", Status: "passed"}},
		Processes: []record.Process{{Name: "poller", Argv: []string{"flownet", "poll-requests"}, ExitCode: new(0), StdoutTail: strings.Join(lines, "\n") + "\n"}}}
	recs := []*record.Scenario{passed, failed, hook}
	run := &record.Run{Start: t0, End: t0.Add(3 * time.Second), SUT: record.SUTIdentity{Commit: "c1"},
		Evidence: []record.EvidenceRow{
			{Criterion: "acceptance 1 (g-pass)", Environment: "sandbox", Result: "passed (1/1 assertions held)", Scenarios: []string{"g-pass"}},
			{Criterion: "acceptance 2", Environment: "sandbox", Result: "failed (1/2 assertions held)", Scenarios: []string{"g-fail", "g-gone"}},
		}}
	for _, s := range recs {
		run.Scenarios = append(run.Scenarios, record.ScenarioSummary{ID: s.ID, Status: s.Status, File: "scenarios/" + s.ID + ".json"})
		run.RunOrder = append(run.RunOrder, s.ID)
	}
	return run, recs
}

func glance(t *testing.T) (page, readme string) {
	t.Helper()
	run, recs := glanceRun()
	v := NewView(run, recs, nil)
	b, err := Index(v)
	require.NoError(t, err)
	return string(b), string(Readme(v))
}

// section is the page's section of one scenario: from its heading to the next one.
func section(t *testing.T, page, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<h3 id="s-`+id+`">`)
	require.True(t, ok, "no section of %s", id)
	if i := strings.Index(rest, "<h3 "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// index.html and README.md show the evidence rows alike: each criterion with its result
// (the assertions that held) and every scenario linked to its record; a scenario without a
// record in the archive is named, not linked.
func TestEvidenceLinksEachScenarioRecord(t *testing.T) {
	page, readme := glance(t)
	assert.Contains(t, page, `<tr><td>acceptance 2</td><td>sandbox</td><td>failed (1/2 assertions held)</td><td>—</td><td><a href="scenarios/g-fail.json">g-fail</a>, g-gone</td></tr>`)
	assert.Contains(t, page, `<td><a href="scenarios/g-pass.json">g-pass</a></td></tr>`)
	assert.Contains(t, readme, "| acceptance 2 | sandbox | failed (1/2 assertions held) | — | [g-fail](scenarios/g-fail.json), g-gone |")
	// The results table's Record column links too, in both.
	assert.Contains(t, page, `<td><a href="scenarios/g-pass.json"><code>scenarios/g-pass.json</code></a></td></tr>`)
	assert.Contains(t, readme, "| [`scenarios/g-pass.json`](scenarios/g-pass.json) |")
}

// A failure is said once: its failed assertion with expected and seen, the step error only
// for what it adds, the runner's reason not at all when it repeats them; the results row
// links to it. The processes involved are the ones that ended badly, with their tails.
func TestEachFailureOnce(t *testing.T) {
	page, readme := glance(t)
	for name, doc := range map[string]string{"index.html": page, "README.md": readme} {
		assert.Equal(t, 1, strings.Count(doc, "SEVEN-RUNS"), "%s: the failed assertion once", name)
		assert.Contains(t, doc, "reading runs: the failed assertion", "%s: the step error says what it adds", name)
		assert.NotContains(t, doc, `step "it ran once" failed`, "%s: the reason repeats the step", name)
		assert.Contains(t, doc, "Error [KSQL_FAILED]", "%s: the tail of the process that exited 3", name)
		assert.NotContains(t, doc, "QUIET-OUTPUT", "%s: a process that exited 0 is not involved when another ended badly", name)
		assert.Contains(t, doc, "After hook: leftover process", "%s: a reason nothing else says is shown", name)
	}
	fail := section(t, page, "g-fail")
	assert.Contains(t, fail, `<tr><td>count of runs</td><td>ONE-RUN</td><td>SEVEN-RUNS</td></tr>`)
	assert.Contains(t, fail, "<summary>process second run — exit 3</summary>")
	assert.Contains(t, page, `<a href="#f-g-fail">the failure</a>`)
	assert.Contains(t, fail, `<div class="failure" id="f-g-fail">`)

	// With no process ending badly, those with output are involved, cut to their last lines.
	hook := section(t, page, "g-hook")
	assert.Contains(t, hook, "<summary>process poller — exit 0</summary>")
	assert.Contains(t, hook, "stdout (last 20 of 30 lines; the record keeps the whole tail)")
	assert.Contains(t, hook, "out line 30")
	assert.Contains(t, hook, "out line 11")
	assert.NotContains(t, hook, "out line 10")
}

// Every scenario's steps and assertions are one click away (a closed <details>), a pass's
// too; a failed assertion there points to the failure instead of repeating it.
func TestStepsAndAssertionsOfEveryScenario(t *testing.T) {
	page, _ := glance(t)
	pass := section(t, page, "g-pass")
	require.Regexp(t, `(?s)<details class="steps"><summary>Steps and assertions: 2 steps, 1 of 1 assertions held</summary>.*</details>`, pass)
	details := regexp.MustCompile(`(?s)<details class="steps">.*</details>`).FindString(pass)
	assert.Contains(t, details, `<tr><td>Then it ran once</td><td><span class="st" style="background:#2e7d32">passed</span></td>`)
	assert.Contains(t, details, `<tr><td>runs of the network</td><td>EXPECTED-ONE</td><td>SEEN-ONE</td><td>yes</td></tr>`)
	assert.NotContains(t, pass, `class="failure"`)

	fail := regexp.MustCompile(`(?s)<details class="steps">.*</details>`).FindString(section(t, page, "g-fail"))
	assert.Contains(t, fail, "1 of 2 assertions held")
	assert.Contains(t, fail, `<tr><td>the network exists</td><td>yes</td><td>yes</td><td>yes</td></tr>`)
	assert.Contains(t, fail, `<tr><td>count of runs</td><td colspan="2" class="muted">in the failure above</td><td><b>no</b></td></tr>`)
}
