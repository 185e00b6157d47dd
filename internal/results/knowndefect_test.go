package results

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var kpd1 = KnownDefect{ID: "KPD-1", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Scenario: "p2-16-02",
	Assertion: "NETWORK_RUN count", Evidence: "docs/product-findings.md#kpd-1", Summary: "two runs"}

var realProduct = &Product{Kind: ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Node: "v22.1.0"}

// failingBy is a failed record whose one failing step failed by the assertion what, as
// scenario.State.Assert words it.
func failingBy(id, what string) *Scenario {
	s := sampleScenario(id, StatusFailed)
	err := what + ": expected 1, saw 2"
	s.Assertions = []Assertion{{What: "records read", Expected: "3", Seen: "3", OK: true}, {What: what, Expected: "1", Seen: "2"}}
	s.Steps[1].Error = err
	s.Reason = `step "exactly one NETWORK_RUN exists" failed: ` + err
	return s
}

// An entry applies to the real product of its package and version only: never to the
// reference model, another version or another package, nor to a run that names no product.
func TestKnownDefectAppliesByProduct(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Product
		want bool
	}{
		{"real, same package and version", realProduct, true},
		{"real by path, same package and version", &Product{Kind: ProductReal, Source: "path", Package: "@rex0220/ksql-flownet", Version: "1.0.0"}, true},
		{"another version", &Product{Kind: ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.1"}, false},
		{"another package", &Product{Kind: ProductReal, Source: "path", Package: "@someone/ksql-flownet", Version: "1.0.0"}, false},
		{"the reference model", &Product{Kind: ProductReference, Source: "sandbox", Package: "@rex0220/ksql-flownet", Version: "1.0.0"}, false},
		{"no product named", nil, false},
	} {
		assert.Equal(t, c.want, kpd1.AppliesTo(c.p), c.name)
		assert.Equal(t, c.want, len(Applying([]KnownDefect{kpd1}, c.p)) == 1, c.name)
	}
}

// The declared failure excuses only itself: another assertion, a second failed assertion, a
// step that failed otherwise (a timeout), a failed cleanup or an undefined step are ordinary
// failures; a pass is flagged; a blocked scenario is not judged.
func TestJudgeKnownDefect(t *testing.T) {
	applying := []KnownDefect{kpd1}
	cases := []struct {
		name string
		rec  func() *Scenario
		want string // outcome, "" for no mark
	}{
		{"fails by the declared assertion", func() *Scenario { return failingBy("p2-16-02", "NETWORK_RUN count in app=4257") }, KDReproduced},
		{"fails by another assertion", func() *Scenario { return failingBy("p2-16-02", "NODE_ATTEMPT count") }, KDOtherFailure},
		{"a second assertion failed too", func() *Scenario {
			s := failingBy("p2-16-02", "NETWORK_RUN count in app=4257")
			s.Assertions = append(s.Assertions, Assertion{What: "request_state", Expected: "DONE", Seen: "FAILED"})
			return s
		}, KDOtherFailure},
		{"the step failed by a timeout after the assertion", func() *Scenario {
			s := failingBy("p2-16-02", "NETWORK_RUN count in app=4257")
			s.Steps[1].Error = "step deadline 5m0s exceeded"
			s.Reason = `step "exactly one NETWORK_RUN exists" failed: step deadline 5m0s exceeded`
			return s
		}, KDOtherFailure},
		{"no assertion failed (the step's own error)", func() *Scenario { return sampleScenario("p2-16-02", StatusFailed) }, KDOtherFailure},
		{"the cleanup failed as well", func() *Scenario {
			s := failingBy("p2-16-02", "NETWORK_RUN count in app=4257")
			s.Cleanup = Cleanup{OK: false, Error: "delete refused"}
			return s
		}, KDOtherFailure},
		{"an undefined step", func() *Scenario {
			s := failingBy("p2-16-02", "NETWORK_RUN count in app=4257")
			s.Steps = append(s.Steps, Step{Text: "something new", Status: "undefined"})
			return s
		}, KDOtherFailure},
		{"passes: no longer reproduces", func() *Scenario { return sampleScenario("p2-16-02", StatusPassed) }, KDNoLongerReproduces},
		{"blocked: not judged", func() *Scenario { return sampleScenario("p2-16-02", StatusBlocked) }, ""},
		{"another scenario", func() *Scenario { return failingBy("p2-16-01", "NETWORK_RUN count in app=4257") }, ""},
	}
	for _, c := range cases {
		rec := c.rec()
		JudgeKnownDefect(rec, applying)
		if c.want == "" {
			assert.Nil(t, rec.KnownDefect, c.name)
			continue
		}
		require.NotNil(t, rec.KnownDefect, c.name)
		assert.Equal(t, c.want, rec.KnownDefect.Outcome, c.name)
		assert.Equal(t, "KPD-1", rec.KnownDefect.ID)
		assert.Equal(t, "@rex0220/ksql-flownet@1.0.0", rec.KnownDefect.Product)
	}
	// Not applying (the reference): the same failure stays unmarked.
	rec := failingBy("p2-16-02", "NETWORK_RUN count in app=4257")
	JudgeKnownDefect(rec, Applying([]KnownDefect{kpd1}, &Product{Kind: ProductReference, Source: "sandbox"}))
	assert.Nil(t, rec.KnownDefect)
}

func TestUnexcused(t *testing.T) {
	mark := func(o string) *KnownDefectMark { return &KnownDefectMark{ID: "KPD-1", Outcome: o} }
	assert.True(t, Unexcused(StatusFailed, nil))
	assert.False(t, Unexcused(StatusFailed, mark(KDReproduced)))
	assert.True(t, Unexcused(StatusFailed, mark(KDOtherFailure)))
	assert.True(t, Unexcused(StatusPassed, mark(KDNoLongerReproduces)))
	assert.False(t, Unexcused(StatusPassed, nil))
	assert.True(t, Unexcused(StatusBlocked, nil))
	assert.False(t, Unexcused(StatusNotRun, nil))
}

// knownDefectArchive is a finished archive of a real-product run: p2-16-02 reproduces KPD-1,
// p2-16-03 passes under KPD-2 (no longer reproduces), p2-16-01 passes.
func knownDefectArchive(t *testing.T) (string, *Run) {
	t.Helper()
	a, err := Create(t.TempDir(), "kpd", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), testRedactor())
	require.NoError(t, err)
	kpd2 := kpd1
	kpd2.ID, kpd2.Scenario = "KPD-2", "p2-16-03"
	applying := Applying([]KnownDefect{kpd1, kpd2}, realProduct)
	for _, s := range []*Scenario{sampleScenario("p2-16-01", StatusPassed), failingBy("p2-16-02", "NETWORK_RUN count in app=4257"), sampleScenario("p2-16-03", StatusPassed)} {
		JudgeKnownDefect(s, applying)
		require.NoError(t, a.WriteScenario(s))
	}
	run := &Run{Target: "sandbox", Product: realProduct, End: time.Now(), RunOrder: []string{"p2-16-01", "p2-16-02", "p2-16-03"}}
	require.NoError(t, a.Finish(run))
	return a.Dir(), run
}

// A reproduced known defect is failed in run.json (with its mark and a count of its own), in
// the totals line, README, page and JUnit; a known defect that no longer reproduces is
// passed and flagged everywhere a person looks. The archive is schema-valid and whole.
func TestKnownDefectInTheRecord(t *testing.T) {
	dir, _ := knownDefectArchive(t)
	requireValid(t, dir)
	assert.Empty(t, CheckIntegrity(dir))

	var run Run
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, 1, run.Totals.Failed, "a known defect is still a failure")
	assert.Equal(t, 1, run.Totals.KnownDefects)
	assert.Equal(t, 2, run.Totals.Passed)
	assert.Equal(t, 1, run.Totals.KnownDefectsNotReproduced)
	byID := map[string]ScenarioSummary{}
	for _, s := range run.Scenarios {
		byID[s.ID] = s
	}
	assert.Equal(t, StatusFailed, byID["p2-16-02"].Status)
	require.NotNil(t, byID["p2-16-02"].KnownDefect)
	assert.Equal(t, KDReproduced, byID["p2-16-02"].KnownDefect.Outcome)
	assert.Equal(t, StatusPassed, byID["p2-16-03"].Status)
	assert.Equal(t, KDNoLongerReproduces, byID["p2-16-03"].KnownDefect.Outcome)
	assert.Nil(t, byID["p2-16-01"].KnownDefect)

	line := RunTotalsText(&run)
	assert.Contains(t, line, "0 failed, 1 known product defect (KPD-1), 0 not run, of 3")
	assert.Contains(t, line, "2 passed (1 known product defect(s) no longer reproduce (KPD-2): update the catalogue)")
	stale := "KPD-2 no longer reproduces on @rex0220/ksql-flownet@1.0.0: the product may be fixed; remove or update the entry"

	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "- Result: "+line)
	assert.Contains(t, string(readme), "- **Warning**: "+stale)
	assert.Contains(t, string(readme), "| p2-16-02 | 2 | **failed** — known product defect KPD-1 |")
	assert.Contains(t, string(readme), "Failed — known product defect KPD-1 of @rex0220/ksql-flownet@1.0.0")

	// The job summary: the stale entry fails the run, the reproduced defect is not a failure.
	summary, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "**failed**")
	assert.Contains(t, string(summary), line)
	assert.Contains(t, string(summary), "## Known product defects\n\n- **p2-16-02**: KPD-1 of @rex0220/ksql-flownet@1.0.0, by its declared assertion \"NETWORK_RUN count\"")
	assert.Contains(t, string(summary), "- **p2-16-03**: "+stale)
	assert.NotContains(t, string(summary), "## Failures")

	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "<b>Warning</b>: "+stale)
	assert.Contains(t, string(page), "<b>known product defect KPD-1</b>")
	assert.Contains(t, string(page), "0 failed, 1 known product defect (KPD-1)")

	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	jx, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(jx, &suites))
	assert.Equal(t, 1, suites.Failures, "a known defect is still a JUnit failure")
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "p2-16-02") {
				require.NotNil(t, c.Failure)
				assert.True(t, strings.HasPrefix(c.Failure.Message, "known product defect KPD-1 (@rex0220/ksql-flownet@1.0.0"), c.Failure.Message)
			}
		}
	}
}

// A gate does not pass with a known product defect: it fails, naming the KPD.
func TestGateFailsWithAKnownDefect(t *testing.T) {
	dir, _ := knownDefectArchive(t)
	_, run, err := ReadArchive(dir)
	require.NoError(t, err)
	g := &GateRecord{Gate: "r2", Scenarios: []GateScenario{{ID: "p2-16-01", Required: true}, {ID: "p2-16-02", Required: true}, {ID: "p2-16-03", Required: true}}}
	CompleteGate(g, run)
	assert.Equal(t, GateFail, g.Verdict)
	assert.Contains(t, g.VerdictWhy, "1 scenario(s) failed: p2-16-02 (known product defect KPD-1)")
	assert.Equal(t, "KPD-1", g.Scenarios[1].KnownDefect)
	assert.True(t, strings.HasPrefix(g.Scenarios[1].Why, "known product defect KPD-1: "), g.Scenarios[1].Why)
	assert.Contains(t, g.Scenarios[2].Why, "KPD-2 no longer reproduces")
	assert.Empty(t, g.Scenarios[2].KnownDefect)
}

// archive verify names a known-defect mark that contradicts its status, an unknown outcome,
// and a record whose mark run.json does not repeat.
func TestCheckIntegrityOfKnownDefectMarks(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"a reproduced mark on a pass", func(t *testing.T, dir string) {
			for _, f := range []string{filepath.Join(dir, ScenarioDir, "p2-16-02.json")} {
				editJSON(t, f, func(m map[string]any) { m["status"] = StatusPassed })
			}
		}, "scenarios/p2-16-02.json: known_defect KPD-1 is reproduced, but the status is passed (want failed)"},
		{"an unknown outcome", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ScenarioDir, "p2-16-02.json"), func(m map[string]any) {
				m["known_defect"].(map[string]any)["outcome"] = "excused"
			})
		}, `known_defect KPD-1: outcome "excused" is not one flowtest writes`},
		{"a mark run.json lacks", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) {
				delete(m["scenarios"].([]any)[1].(map[string]any), "known_defect")
			})
		}, "scenarios/p2-16-02.json: known_defect KPD-1 reproduced, run.json says none for p2-16-02"},
		{"known defects miscounted", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) { m["totals"].(map[string]any)["known_defects"] = 0.0 })
		}, "do not add up"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := knownDefectArchive(t)
			c.edit(t, dir)
			assert.Contains(t, problemsText(CheckIntegrity(dir)), c.want)
		})
	}
}

// The closing line of a run without known defects is as it was.
func TestTotalsTextWithoutKnownDefects(t *testing.T) {
	assert.Equal(t, "1 passed, 1 failed, 0 not run, of 2", TotalsText(Totals{Total: 2, Passed: 1, Failed: 1}))
	assert.Equal(t, "0 passed, 1 failed, 2 known product defects, 0 not run, of 3", TotalsText(Totals{Total: 3, Failed: 3, KnownDefects: 2}))
}
