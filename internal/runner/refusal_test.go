package runner

// Nothing green by accident: selections that select nothing or name tags nobody
// carries are refused; a run where nothing ran has its own exit code; malformed manifests and
// feature files are refused with file:line, never a panic and never a partial run.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

func TestCheckSelection(t *testing.T) {
	fsys := selfFeatures(nil)
	cases := []struct {
		expr       string
		allowEmpty bool
		want       []string // key words of the refusal; nil = accepted
	}{
		{"", false, nil},
		{"@s1", false, nil},
		{"@gamma", false, nil}, // selected but not implemented: runs and exits ExitNothingRan
		{"@alpah", false, []string{`--tags "@alpah"`, "no scenario carries @alpah", "closest: @alpha"}},
		{"@s1 or @bta", false, []string{"no scenario carries @bta", "closest: @beta"}},
		{"@s1 and not @wip", false, []string{"no scenario carries @wip"}},
		{"@s1 and @s2", false, []string{`--tags "@s1 and @s2" selects no scenario`, "every tag exists", "--allow-empty"}},
		{"@s1 and @s2", true, nil},
		{"@alpah", true, []string{"no scenario carries @alpah"}}, // --allow-empty does not excuse a typo
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			items := plan(t, fsys, c.expr)
			err := CheckSelection(items, c.expr, tagexpr.MustParse(c.expr), "", c.allowEmpty)
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestCheckSelectionRerun(t *testing.T) {
	fsys := selfFeatures(nil)
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := Discover(fsys, ".", m)
	require.NoError(t, err)
	none := Plan(m, feats, Selection{GOOS: "linux", Rerun: map[string]bool{}})
	err = CheckSelection(none, "", tagexpr.Expr{}, "old/archive", false)
	require.ErrorContains(t, err, "--rerun old/archive: no scenario of the manifest failed there")
	require.NoError(t, CheckSelection(none, "", tagexpr.Expr{}, "old/archive", true))

	beta := Plan(m, feats, Selection{GOOS: "linux", Rerun: map[string]bool{"beta": true}, Expr: tagexpr.MustParse("@s2")})
	err = CheckSelection(beta, "@s2", tagexpr.MustParse("@s2"), "old/archive", false)
	require.ErrorContains(t, err, `--tags "@s2" with --rerun old/archive selects no scenario`)

	require.ErrorContains(t, CheckRerun(m, "old/archive", []string{"beta", "renamed"}), "renamed are not in the run-order manifest")
	require.NoError(t, CheckRerun(m, "old/archive", []string{"beta"}))
}

func TestClosestTags(t *testing.T) {
	known := []string{"@m5", "@m5-resume", "@m5-mid-failure", "@m6", "@p2-16-01-cancel-before-claim", "@acc-1"}
	assert.Equal(t, []string{"@m5-resume"}, Closest("@m5-resum", known, 1))
	assert.Equal(t, []string{"@p2-16-01-cancel-before-claim"}, Closest("@p2-16-01", known, 1), "a prefix of an id is close")
	assert.Equal(t, []string{"@m5", "@m6"}, Closest("@M5x", known, 2))
	assert.Len(t, Closest("@x", known, 3), 3)
	assert.Empty(t, Closest("@x", nil, 3))
	assert.Equal(t, 3, EditDistance("kitten", "sitting"))
	assert.Equal(t, 2, EditDistance("日本語", "日本"+"xy"[:1]+"z"))
}

// Exit codes by what ran: all not run is ExitNothingRan; some ran and passed, others not
// implemented, is still ExitPassed (make run's documented behaviour); an empty selection the
// user allowed is ExitPassed.
func TestExitCodeWhenNothingRan(t *testing.T) {
	fsys := selfFeatures(nil)
	for expr, want := range map[string]int{
		"@gamma":                ExitNothingRan, // not implemented
		"@win-only":             ExitNothingRan, // other platform
		"@gamma or @win-only":   ExitNothingRan,
		"@gamma or @delta":      ExitPassed,
		"@s2":                   ExitPassed,
		"@s1 and @s2":           ExitPassed, // empty, allowed by the caller
		"@gamma or @beta":       ExitFailed,
		"@epsilon or @win-only": ExitNothingRan,
	} {
		t.Run(expr, func(t *testing.T) {
			items := plan(t, fsys, expr)
			r := execute(t, fsys, items, Options{})
			assert.Equal(t, want, r.res.Code)
			if want == ExitNothingRan {
				assert.Equal(t, ExitNothingRan, PlanCode(items), "the plan predicts it")
				assert.Empty(t, startedOrder(r.progress.String()))
				_, err := os.Stat(filepath.Join(r.archive.Dir(), "run.json"))
				assert.NoError(t, err, "the archive still records every entry and why it did not run")
			}
		})
	}
	assert.Equal(t, Counts{Entries: 6, Selected: 2, Runnable: 1}, Count(plan(t, fsys, "@gamma or @delta")))
	assert.Equal(t, Counts{Entries: 6, Selected: 0, Runnable: 0}, Count(plan(t, fsys, "@s1 and @s2")))
}

func TestValidateFormat(t *testing.T) {
	dir := t.TempDir()
	for f, want := range map[string]string{
		"pretty":                                 `--format "pretty": give the formatter a file, e.g. pretty:out/pretty.txt (the run writes one per scenario, out/pretty-<id>.txt`,
		"progress":                               "give the formatter a file, e.g. progress:out/progress.txt",
		"junit":                                  "e.g. junit:out/junit.xml",
		"pretty:" + filepath.Join(dir, "p.txt"):  "",
		"junit:" + filepath.Join(dir, "out.xml"): "",
		"cucumber:" + filepath.Join(dir, "c.json"): "",
		"bogus":                                  `unknown formatter "bogus" (known: cucumber, events, junit, pretty, progress`,
		"junit:":                                 "no file name after the colon",
		"junit:" + filepath.Join(dir, "no", "x"): "does not exist",
		"junit:" + dir:                           "is a directory",
		"pretty,junit:x.xml":                     "one formatter per --format",
		"Pretty":                                 "unknown formatter",
		"":                                       "unknown formatter",
		"junit:" + filepath.Join(dir, "out.xml:2"): "",
	} {
		err := ValidateFormat(f)
		if want == "" {
			assert.NoError(t, err, f)
			continue
		}
		if assert.Error(t, err, f) {
			assert.Contains(t, err.Error(), want, f)
			assert.Contains(t, err.Error(), "--format", f)
		}
	}
}

// Every malformed manifest is refused with file:line and a one-line message.
func TestManifestRefusalsNameFileAndLine(t *testing.T) {
	const head = "schema_version: 1\nscenarios:\n"
	cases := []struct{ name, text, want string }{
		{"empty file", "", "m.yaml: the run-order manifest is empty"},
		{"yaml syntax", head + "  - {id: a, series: s\n", "m.yaml:3: YAML: did not find expected ',' or '}'"},
		{"tab indentation", head + "\t- {id: a, series: s}\n", "m.yaml:3: YAML: found character that cannot start any token"},
		{"unknown top key", "schema_version: 1\nscenaros:\n  - {id: a, series: s}\n", `m.yaml:2: unknown key "scenaros" (known: schema_version, extended, scenarios)`},
		{"unknown extended series", "schema_version: 1\nextended: [x]\nscenarios:\n  - {id: a, series: s}\n", `m.yaml:2: extended series "x" has no scenario in the manifest`},
		{"extended before acceptance", "schema_version: 1\nextended: [x]\nscenarios:\n  - {id: a, series: x}\n  - {id: b, series: s}\n", "m.yaml:4: scenario a of the extended series x comes before the acceptance scenario b"},
		{"extended twice", "schema_version: 1\nextended: [x, x]\nscenarios:\n  - {id: a, series: x}\n", `m.yaml:2: extended series "x" listed twice`},
		{"unknown entry key", head + "  - {id: a, series: s}\n  - {id: b, series: s, acceptence: [1]}\n", `m.yaml:4: unknown scenario key "acceptence" (known: id, series, acceptance, needs, limits, explore, invariant_exemptions)`},
		{"unknown explore key", head + "  - {id: a, series: s, explore: {process: [A]}}\n", `m.yaml:3: unknown explore key "process" (known: processes, via, reason)`},
		{"explore not a mapping", head + "  - {id: a, series: s, explore: [A]}\n", "m.yaml:3: explore must be a mapping"},
		{"explore without processes", head + "  - {id: a, series: s, explore: {processes: []}}\n", "m.yaml:3: scenario a: explore names no processes (and no via)"},
		{"explore processes and via", head + "  - {id: a, series: s, explore: {processes: [A]}}\n  - {id: b, series: s, explore: {processes: [A], via: a, reason: r}}\n", "m.yaml:4: scenario b: explore has processes and via"},
		{"explore via without reason", head + "  - {id: a, series: s, explore: {processes: [A]}}\n  - {id: b, series: s, explore: {via: a}}\n", "m.yaml:4: scenario b: explore via a needs a reason"},
		{"explore reason without via", head + "  - {id: a, series: s, explore: {processes: [A], reason: r}}\n", "m.yaml:3: scenario a: explore reason without via"},
		{"explore via unknown", head + "  - {id: b, series: s, explore: {via: z, reason: r}}\n", "m.yaml:3: scenario b: explore via z: no such scenario in the manifest"},
		{"explore via itself", head + "  - {id: b, series: s, explore: {via: b, reason: r}}\n", "m.yaml:3: scenario b: explore via itself"},
		{"explore via unexplorable", head + "  - {id: a, series: s}\n  - {id: b, series: s, explore: {via: a, reason: r}}\n", "m.yaml:4: scenario b: explore via a, which is not explorable itself"},
		{"explore via a redirect", head + "  - {id: a, series: s, explore: {processes: [A]}}\n  - {id: b, series: s, explore: {via: a, reason: r}}\n  - {id: c, series: s, explore: {via: b, reason: r}}\n", "m.yaml:5: scenario c: explore via b, which is not explorable itself"},
		{"explore process twice", head + "  - {id: a, series: s, explore: {processes: [A, A]}}\n", `m.yaml:3: scenario a: explore process "A" is empty or listed twice`},
		{"old platform key", head + "  - {id: a, series: s, platform: windows}\n", "declared as needs: [windows]"},
		{"duplicate id", head + "  - {id: a, series: s}\n  - {id: b, series: s}\n  - {id: a, series: s}\n", "m.yaml:5: id a listed twice (first at line 3)"},
		{"duplicate key", head + "  - {id: a, series: s, id: b}\n", `m.yaml:3: mapping key "id" already defined`},
		{"missing id", head + "  - {series: s}\n", "m.yaml:3: scenario entry 1 has no id"},
		{"missing series", head + "  - id: a\n", "m.yaml:3: scenario a has no series"},
		{"bad id", head + "  - {id: M5 Resume, series: s}\n", `m.yaml:3: id "M5 Resume" is not lower-case`},
		{"id is a series", head + "  - {id: a, series: s}\n  - {id: s, series: t}\n", "m.yaml:4: id s is also the name of a series"},
		{"acc prefix", head + "  - {id: acc-1, series: s}\n", "starts with acc-"},
		{"bad acceptance", head + "  - {id: a, series: s, acceptance: [\"1 2\"]}\n", `acceptance "1 2" cannot be a tag`},
		{"repeated acceptance", head + "  - {id: a, series: s, acceptance: [\"1\", \"1\"]}\n", `m.yaml:3: scenario a: acceptance "1" listed twice`},
		{"wrong type", head + "  - {id: [a], series: s}\n", "m.yaml:3: cannot unmarshal !!seq into string"},
		{"entry not a mapping", head + "  - a\n", "m.yaml:3: a scenario entry must be a mapping"},
		{"scenarios not a list", "schema_version: 1\nscenarios: {a: b}\n", "m.yaml:2: cannot unmarshal !!map"},
		{"second document", head + "  - {id: a, series: s}\n---\nscenarios: []\n", "m.yaml:4: a second YAML document"},
		{"schema version", "schema_version: 2\nscenarios:\n  - {id: a, series: s}\n", "m.yaml:1: schema_version 2, want 1"},
		{"no scenarios", "schema_version: 1\nscenarios: []\n", "m.yaml:2: the run-order manifest lists no scenarios"},
		{"not a mapping", "- a\n", "m.yaml:1: the run-order manifest must be a mapping"},
		{"unknown need", head + "  - {id: a, series: s, needs: [gpu]}\n", `m.yaml:3: unknown need "gpu"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest("m.yaml", []byte(c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// Feature files are checked against the manifest: parse errors with line and column, a file
// with no scenario, a scenario without (or with a misspelt) id, tags that disagree with the
// manifest entry.
func TestDiscoverRefusals(t *testing.T) {
	cases := []struct{ name, file, text, want string }{
		{"gherkin syntax", "x/bad.feature", "Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n  Blah blah\n",
			"features/x/bad.feature:5:3: expected:"},
		{"whitespace in tag", "x/bad.feature", "Feature: x\n  @gamma b\n  Scenario: y\n", "features/x/bad.feature:2:3: A tag may not contain whitespace"},
		{"no scenario", "x/empty.feature", "Feature: x\n  Background:\n    Given a step that passes\n", "features/x/empty.feature: no scenario in this feature file"},
		{"empty file", "x/empty.feature", "", "features/x/empty.feature: no scenario"},
		{"misspelt id", "x/typo.feature", "Feature: x\n  @gama @s2\n  Scenario: y\n    Given a step that passes\n",
			`features/x/typo.feature:3: scenario "y" carries no tag naming a manifest id (add @<id> and list the id in features/manifest.yaml) (closest manifest id: @gamma)`},
		{"missing series tag", "x/gamma.feature", "Feature: x\n  @gamma\n  Scenario: y\n    Given a step that passes\n",
			`features/x/gamma.feature:3: scenario "y" (@gamma): lacks @s2, which its manifest entry implies`},
		{"missing acceptance tag", "x/delta2.feature", "Feature: x\n  @gamma @s2 @acc-7\n  Scenario: y\n    Given a step that passes\n",
			"carries @acc-7, which its manifest entry does not declare"},
		{"foreign series tag", "x/gamma.feature", "Feature: x\n  @gamma @s2 @s1\n  Scenario: y\n    Given a step that passes\n",
			"carries @s1, which its manifest entry does not declare"},
		{"duplicate id", "x/alpha2.feature", "Feature: x\n  @alpha @s1 @acc-1\n  Scenario: again\n    Given a step that passes\n",
			"scenario id alpha is already used at features/"},
		{"two ids", "x/two.feature", "Feature: x\n  @gamma @beta @s2 @s1\n  Scenario: y\n    Given a step that passes\n",
			"carries several manifest ids"},
		// Issue 42: gherkin's line scanner stops at 64 KiB and godog then panics; the refusal
		// names the line before anything parses.
		{"line over 64 KiB", "x/long.feature", "Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that " + strings.Repeat("p", 70000) + "\n",
			"features/x/long.feature:4: line is 70022 bytes long, over the 65535 bytes a feature file line may have"},
		// Encodings gherkin misreads: refused with what to do, not "expected: #EOF … got '\ufeffFeature'",
		// nor accepted with the bytes in the step text.
		{"UTF-8 BOM", "x/bom.feature", "\ufeffFeature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n",
			"features/x/bom.feature:1: starts with a byte order mark (U+FEFF), which gherkin does not read; save the file as UTF-8 without BOM"},
		{"UTF-16", "x/u16.feature", "\xff\xfeF\x00e\x00a\x00t\x00u\x00r\x00e\x00:\x00 \x00x\x00\n\x00",
			"features/x/u16.feature:1: is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"},
		{"NUL byte", "x/nul.feature", "Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that \x00passes\n",
			"features/x/nul.feature:4: holds a NUL byte (is the file UTF-16?); feature files are UTF-8 text"},
		{"not UTF-8", "x/sjis.feature", "Feature: x\n  @gamma @s2\n  Scenario: \x83e\x83X\x83g\n    Given a step that passes\n",
			"features/x/sjis.feature:3: not valid UTF-8 (saved as Shift_JIS?); feature files are UTF-8"},
		// Gherkin places "unexpected end of file" at column 0 of the line after the last.
		{"unclosed doc string", "x/doc.feature", "Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n    \"\"\"\n    doc\n",
			"features/x/doc.feature:6: unexpected end of file, expected: #DocStringSeparator, #Other"},
		{"last line over 64 KiB without newline", "x/long.feature", "Feature: x\n  @gamma @s2\n  Scenario: y\n    Given a step that passes\n# " + strings.Repeat("c", 65534),
			"features/x/long.feature:5: line is 65536 bytes long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := selfFeatures(map[string]string{c.file: c.text})
			m, err := LoadManifest(fsys, "manifest.yaml")
			require.NoError(t, err)
			_, err = DiscoverNamed(fsys, ".", m, "features")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	// Extra tags that are neither series nor acceptance are free (@slow, @wip …).
	fsys := selfFeatures(map[string]string{"x/gamma.feature": "Feature: x\n  @gamma @s2 @slow\n  Scenario: y\n    Given a step that passes\n"})
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := Discover(fsys, ".", m)
	require.NoError(t, err)
	assert.Contains(t, feats["gamma"].Tags, "@slow")
	assert.Contains(t, KnownTags(Plan(m, feats, Selection{})), "@slow")
}

// The longest line gherkin's scanner reads is accepted, with or without its newline: the
// refusal is exactly at the parser's limit, not below it.
func TestDiscoverAcceptsTheLongestLine(t *testing.T) {
	step := "    Given a step that passes # "
	for _, tail := range []string{"\n", ""} {
		long := step + strings.Repeat("x", maxFeatureLine-len(step))
		fsys := selfFeatures(map[string]string{"x/gamma.feature": "Feature: x\n  @gamma @s2\n  Scenario: y\n" + long + tail})
		m, err := LoadManifest(fsys, "manifest.yaml")
		require.NoError(t, err)
		_, err = Discover(fsys, ".", m)
		require.NoError(t, err, "a %d-byte line", len(long))
	}
}

// The runner never starts a scenario of a refused plan: refusals happen in Plan's inputs,
// so a run with a malformed feature file anywhere starts nothing at all.
func TestNoPartialRunOnAMalformedFeature(t *testing.T) {
	fsys := selfFeatures(map[string]string{"zz/broken.feature": "Feature: broken\n  Scenario: no id\n    Given a step that passes\n"})
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	_, err = Discover(fsys, ".", m)
	require.ErrorContains(t, err, "zz/broken.feature:2")
}

func TestRealFeaturesCarryTheirManifestTags(t *testing.T) {
	m, err := LoadManifest(os.DirFS("../../features"), "manifest.yaml")
	require.NoError(t, err)
	feats, err := DiscoverNamed(os.DirFS("../../features"), ".", m, "features")
	require.NoError(t, err)
	for id, f := range feats {
		e, _ := m.Entry(id)
		for _, tag := range e.Tags() {
			assert.Contains(t, f.Tags, tag, "%s: %s", id, strings.Join(f.Tags, " "))
		}
	}
}

func TestManifestExploreNamesTheScheduledProcesses(t *testing.T) {
	m, err := ParseManifest("m.yaml", []byte("schema_version: 1\nscenarios:\n  - {id: a, series: s, explore: {processes: [poller A, poller B]}}\n  - {id: b, series: s}\n"))
	require.NoError(t, err)
	require.NotNil(t, m.Scenarios[0].Explore)
	assert.Equal(t, []string{"poller A", "poller B"}, m.Scenarios[0].Explore.Processes)
	assert.Nil(t, m.Scenarios[1].Explore, "a scenario without explore is not explorable")
	assert.True(t, m.Scenarios[0].Explorable())
	assert.False(t, m.Scenarios[1].Explorable())
}

// A scenario whose barriers force one order is explored through its free-race sibling: the
// redirect is kept with its reason, and the entry is not explorable itself.
func TestManifestExploreViaASibling(t *testing.T) {
	m, err := ParseManifest("m.yaml", []byte("schema_version: 1\nscenarios:\n  - {id: a, series: s, explore: {via: b, reason: its barriers force one order}}\n  - {id: b, series: s, explore: {processes: [resume, archive]}}\n"))
	require.NoError(t, err)
	x := m.Scenarios[0].Explore
	require.NotNil(t, x)
	assert.Equal(t, "b", x.Via)
	assert.Equal(t, "its barriers force one order", x.Reason)
	assert.Empty(t, x.Processes)
	assert.False(t, m.Scenarios[0].Explorable(), "a redirect is not explorable itself")
	assert.True(t, m.Scenarios[1].Explorable())
}
