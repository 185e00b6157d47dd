package explorer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

func sig(process, method, role, kind string, fields ...string) schedule.Signature {
	return schedule.Signature{Process: process, Method: method, Role: role, Kind: kind, Fields: fields}
}

var (
	claimFields = []string{"claim_heartbeat_at", "claimed_at", "claimed_host", "request_state"}
	doneFields  = []string{"request_state", "result_code", "result_message"}
)

// sourceOf is the generator's source of the suite's scenario id (the last Scenario of its
// feature file at path, below features/).
func sourceOf(t *testing.T, id, series, path string, needs, processes []string) GherkinSource {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "features", filepath.FromSlash(path)))
	require.NoError(t, err)
	line := 0
	for i, l := range strings.Split(string(text), "\n") {
		if strings.Contains(l, "Scenario:") {
			line = i + 1
		}
	}
	return GherkinSource{ID: id, Series: series, Needs: needs, Processes: processes, FeatureText: string(text), Path: path, ScenarioLine: line}
}

func duplicatesSource(t *testing.T) GherkinSource {
	return sourceOf(t, "p2-11-03-duplicates", "p2-11", "p2-11/p2-11-03-duplicates.feature", []string{"request-app"}, []string{"poller A", "poller B"})
}

// The order of a lookup-before-lock race: A claims, B claims (loses), claims the other
// request and runs its whole START, and only then A's lock write goes.
func TestGherkinForcesEachStretchBehindBarriers(t *testing.T) {
	order := []schedule.Signature{
		sig("poller A", "PUT", "request", "", claimFields...),
		sig("poller B", "PUT", "request", "", claimFields...),
		sig("poller B", "PUT", "request", "", claimFields...),
		sig("poller B", "POST", "state", "LOCK", "lock_key", "record_key"),
		sig("poller B", "PUT", "request", "", doneFields...),
		sig("poller A", "POST", "state", "LOCK", "lock_key", "record_key"),
		sig("poller A", "PUT", "request", "", doneFields...),
	}
	text, err := Gherkin(duplicatesSource(t), 32, "assertion outcomes of the two STARTs of one key", order)
	require.NoError(t, err)
	var steps []string
	for _, l := range strings.Split(text, "\n") {
		if m := stepLine.FindStringSubmatch(l); m != nil {
			steps = append(steps, m[1]+" "+m[2])
		}
	}
	start := -1
	for i, s := range steps {
		if strings.HasPrefix(s, "And the kintone traffic of \"poller A\"") {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, text)
	assert.Equal(t, []string{
		`And the kintone traffic of "poller A" goes through a fault proxy`,
		`And the kintone traffic of "poller B" goes through a fault proxy`,
		`And barrier "poller A write 1" in the fault proxy of "poller A" holds the PUT of record in the request app before it is sent when it carries "claimed_at"`,
		`And barrier "poller B write 2" in the fault proxy of "poller B" holds the PUT of record in the request app before it is sent when it carries "claimed_at"`,
		`When the poller starts as "poller A"`,
		`And the poller starts as "poller B"`,
		`And barrier "poller A write 1" is reached`,
		`And barrier "poller B write 2" is reached`, // both held before the first release, as under the scheduler
		`And barrier "poller A write 6" in the fault proxy of "poller A" holds the POST of record in the state app before it is sent when it carries "lock_key"`,
		`And barrier "poller A write 1" is released`,
		`And barrier "poller A write 6" is reached`,
		`And barrier "poller B write 2" is released`,
		`And "poller B" exits with code 0`,
		`And barrier "poller A write 6" is released`,
		`And "poller A" exits with code 0`,
		`Then "poller A" exits with code 0`,
	}, steps[start:start+16], text)
	assert.NotContains(t, text, "run at the same time", "the waiting start step is replaced")
	assert.Contains(t, text, "@p2-11-03-duplicates-schedule-32 @p2-11")
	assert.Contains(t, text, "{id: p2-11-03-duplicates-schedule-32, series: p2-11, needs: [fault-proxy, request-app]}")
	assert.Equal(t, `Given the request app holds no REQUESTED or ACCEPTED request`, steps[0], "the scenario's own steps come first")
	assert.Equal(t, `And requests "first" and "second" settled as one START: one DONE, the other DONE "NOOP_ALREADY_SUCCESS" or REJECTED "LOCK_CONFLICT" or "RUN_ALREADY_EXISTS"`, steps[len(steps)-1])
}

// When no field of a stretch's first write tells it from a write of the same process sent
// since its previous hold, each of those is held in turn (each is then the next write).
func TestGherkinHoldsEveryWriteWhenNoFieldTellsThemApart(t *testing.T) {
	order := []schedule.Signature{
		sig("poller A", "PUT", "request", "", claimFields...),
		sig("poller A", "PUT", "request", "", claimFields...),
		sig("poller B", "PUT", "request", "", claimFields...),
		sig("poller A", "PUT", "request", "", claimFields...),
	}
	hs := holdPoints(order, "poller A")
	var at []int
	for _, h := range hs {
		at = append(at, h.at)
	}
	assert.Equal(t, []int{0, 1, 3}, at, "A's second claim is held too: the barrier for its third would catch it")
	text, err := Gherkin(duplicatesSource(t), 1, "x", order)
	require.NoError(t, err)
	assert.Less(t, strings.Index(text, `barrier "poller A write 2" is released`), strings.Index(text, `barrier "poller A write 4" is reached`))
	assert.Less(t, strings.Index(text, `barrier "poller A write 4" is reached`), strings.Index(text, `barrier "poller B write 3" is released`))
}

func TestGherkinRefusesWhatItCannotForce(t *testing.T) {
	src := duplicatesSource(t)
	src.Processes = []string{"poller C", "poller D"}
	_, err := Gherkin(src, 1, "x", []schedule.Signature{sig("poller C", "PUT", "request", "", claimFields...)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run at the same time")

	src = duplicatesSource(t)
	_, err = Gherkin(src, 1, "x", []schedule.Signature{sig("poller Z", "PUT", "request", "", claimFields...)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not explore")
}

// The generated scenario, added to a copy of the suite the way its header says, is a
// scenario `flowtest run --features <copy> --tags @<id>` selects and runs: the copy's
// manifest and feature files load, its tags agree with its entry (the runner refuses any
// disagreement), and it needs the fault proxy its barriers sit in. The explored scenario
// is still there, unchanged.
func TestGherkinJoinsACopyOfTheSuite(t *testing.T) {
	order := []schedule.Signature{
		sig("poller A", "PUT", "request", "", claimFields...),
		sig("poller B", "PUT", "request", "", claimFields...),
		sig("poller A", "POST", "state", "LOCK", "lock_key", "record_key"),
		sig("poller B", "PUT", "request", "", doneFields...),
		sig("poller A", "PUT", "request", "", doneFields...),
	}
	src := duplicatesSource(t)
	text, err := Gherkin(src, 7, "assertion outcomes of the two STARTs of one key", order)
	require.NoError(t, err)
	j := joiningOf(src, 7)
	assert.Contains(t, text, "features/p2-11/p2-11-03-duplicates.feature", "the header names the file to append it to")
	assert.Contains(t, text, j.Entry)
	dst := filepath.Join(t.TempDir(), "features")
	require.NoError(t, AddToSuite(filepath.Join("..", "..", "..", "features"), dst, j, text))

	data, err := os.ReadFile(filepath.Join(dst, "manifest.yaml"))
	require.NoError(t, err)
	m, err := runner.ParseManifest("manifest.yaml", data)
	require.NoError(t, err)
	feats, err := runner.Discover(os.DirFS(dst), ".", m)
	require.NoError(t, err, "the copy's feature files load and their tags agree with the manifest")
	expr, err := tagexpr.Parse("@" + j.ID)
	require.NoError(t, err)
	var ran []runner.Item
	for i, it := range runner.Plan(m, feats, runner.Selection{Expr: expr, GOOS: "linux"}) {
		if it.Run {
			ran = append(ran, it)
			assert.Equal(t, "p2-11-03-duplicates", m.Scenarios[i-1].ID, "its entry follows the explored one")
		}
	}
	require.Len(t, ran, 1)
	it := ran[0]
	assert.Equal(t, j.ID, it.ID)
	assert.Equal(t, "p2-11/p2-11-03-duplicates.feature", it.Feature.Path)
	assert.Contains(t, it.Feature.StepText, `When the poller starts as "poller A"`)
	assert.True(t, it.Needs.Has(runner.Need("fault-proxy")), "its barriers need the fault proxy: %v", it.Needs)
	assert.NotNil(t, feats["p2-11-03-duplicates"], "the explored scenario stays")

	require.Error(t, AddToSuite(filepath.Join("..", "..", "..", "features"), dst, j, text), "an existing copy is not overwritten")
	j.Explored = "no-such-scenario"
	require.ErrorContains(t, AddToSuite(filepath.Join("..", "..", "..", "features"), filepath.Join(t.TempDir(), "f"), j, text), "no one-line entry")
}

func cancelRaceSource(t *testing.T) GherkinSource {
	return sourceOf(t, "ext-07-cancel-claim-race", "ext", "ext/ext-07-cancel-claim-race.feature", []string{"request-app", "fault-proxy"}, []string{"poller 1", "requester"})
}

// stepsOf are the generated scenario's steps, keyword and text.
func stepsOf(text string) []string {
	var steps []string
	for _, l := range strings.Split(text, "\n") {
		if m := stepLine.FindStringSubmatch(l); m != nil {
			steps = append(steps, m[1]+" "+m[2])
		}
	}
	return steps
}

// A background party (the requester's one cancel PUT) has no proxy to hold it before its
// step: its start step goes where its write comes, once every started poller is held at
// its next barrier, and the scenario waits for its answer before releasing anyone.
func TestGherkinPlacesABackgroundPartyWhereItsWriteComes(t *testing.T) {
	cancel := sig("requester", "PUT", "request", "", "cancel_requested")
	claim := sig("poller 1", "PUT", "request", "", claimFields...)
	rest := []schedule.Signature{
		sig("poller 1", "POST", "state", "LOCK", "lock_key", "record_key"),
		sig("poller 1", "PUT", "request", "", doneFields...),
	}
	const startCancel = `And the requester cancels request "contested" on the request board in the background as "requester", with the revision it was created at`
	const answered = `And the requester's cancel was answered 200 or 409`

	steps := stepsOf(must(t)(Gherkin(cancelRaceSource(t), 3, "x", append([]schedule.Signature{cancel, claim}, rest...))))
	at := func(step string) int {
		t.Helper()
		i := slices.Index(steps, step)
		require.GreaterOrEqual(t, i, 0, "no step %q in %v", step, steps)
		return i
	}
	install := at(`And barrier "poller 1 write 2" in the fault proxy of "poller 1" holds the PUT of record in the request app before it is sent when it carries "claimed_at"`)
	start := at(`When the poller starts as "poller 1"`)
	reached := at(`And barrier "poller 1 write 2" is reached`)
	cancelled := at(startCancel)
	released := at(`And barrier "poller 1 write 2" is released`)
	assert.True(t, install < start && start < reached && reached < cancelled && cancelled < at(answered) && at(answered) < released,
		"the cancel goes once poller 1 is held at its claim, and the claim after its answer: %v", steps)
	assert.Less(t, released, at(`And "poller 1" exits with code 0`))
	assert.Equal(t, 1, countStep(steps, startCancel), "the explored start step is replaced, not repeated")
	assert.NotContains(t, steps, `And the kintone traffic of "requester" goes through a fault proxy`, "the requester's step makes its own proxy")

	// The claim first: poller 1 is held at its next write while the cancel goes.
	steps = stepsOf(must(t)(Gherkin(cancelRaceSource(t), 4, "x", []schedule.Signature{claim, rest[0], cancel, rest[1]})))
	cancelled = at(startCancel)
	assert.Less(t, at(`And barrier "poller 1 write 1" is released`), cancelled)
	assert.Less(t, at(`And barrier "poller 1 write 4" is reached`), cancelled)
	assert.Less(t, cancelled, at(`And barrier "poller 1 write 4" is released`))

	_, err := Gherkin(cancelRaceSource(t), 5, "x", []schedule.Signature{cancel, claim, cancel})
	require.ErrorContains(t, err, `background party "requester" released 2 writes`)
}

func must(t *testing.T) func(string, error) string {
	return func(s string, err error) string {
		t.Helper()
		require.NoError(t, err)
		return s
	}
}

func countStep(steps []string, step string) int {
	n := 0
	for _, s := range steps {
		if s == step {
			n++
		}
	}
	return n
}

// p2-01-05 starts its pollers one waiting for the other, behind a barrier on an explored
// process (which the scheduler lifts): the whole block is replaced, its barrier dropped.
func TestGherkinReplacesStartsAmongBarriersOnExploredProcesses(t *testing.T) {
	src := sourceOf(t, "p2-01-05-claim-stale", "p2-01", "p2-01/p2-01-05-claim-stale.feature", []string{"request-app", "fault-proxy"}, []string{"poller A", "poller B"})
	order := []schedule.Signature{
		sig("poller A", "PUT", "request", "", claimFields...),
		sig("poller A", "POST", "state", "LOCK", "lock_key", "record_key"),
		sig("poller B", "PUT", "request", "", claimFields...),
		sig("poller A", "PUT", "request", "", doneFields...),
	}
	steps := stepsOf(must(t)(Gherkin(src, 1, "x", order)))
	for _, gone := range []string{
		`And barrier "claim" in the fault proxy of "poller A" holds the PUT of record in the request app before it is sent when it carries "claimed_at"`,
		`And barrier "claim" is reached`, `And barrier "claim" is released`, `And the poller runs as "poller B"`,
	} {
		assert.NotContains(t, steps, gone)
	}
	i := slices.Index(steps, `When the poller starts as "poller A"`)
	require.GreaterOrEqual(t, i, 0, "%v", steps)
	assert.Equal(t, []string{
		`When the poller starts as "poller A"`,
		`And the poller starts as "poller B"`,
		`And barrier "poller A write 1" is reached`,
		`And barrier "poller B write 3" is reached`,
	}, steps[i:i+4])
	assert.Equal(t, 1, countStep(steps, `And the kintone traffic of "poller A" goes through a fault proxy`), "declared once, by the scenario")
	assert.Contains(t, steps, `And the poller runs with heartbeat 500 ms and stale-after 1000 ms as "recovery poller"`, "the later pollers are untouched")
}
