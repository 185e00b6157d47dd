package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/pack"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// scenarioRow is one scenario of a hand-made archive: its id, status and not-run reason.
type scenarioRow struct{ id, status, reason string }

// archiveOf writes a finished, whole archive of the given scenarios in that run order without
// running a suite.
func archiveOf(t *testing.T, rows []scenarioRow) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "hand", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	var order []string
	for _, r := range rows {
		order = append(order, r.id)
	}
	a.SetOrder(order)
	for _, r := range rows {
		start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
		s := &results.Scenario{SchemaVersion: results.SchemaVersion, ID: r.id, Feature: "f", Series: "m5",
			Tags: []string{"@" + r.id}, Status: r.status, Reason: r.reason, Start: start, End: start.Add(time.Second), DurationMS: 1000}
		if r.status == results.StatusNotRun {
			s.End, s.DurationMS = start, 0
		}
		require.NoError(t, a.WriteScenario(s))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: order, End: time.Now()}))
	return a.Dir()
}

// editRecord rewrites one field of a JSON file of an archive, as a stray edit or a broken
// writer would.
func editRecord(t *testing.T, file, field string, value any) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m))
	m[field] = value
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

// smallArchive writes a finished two-scenario archive without running a suite.
func smallArchive(t *testing.T) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "small", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	order := []string{"a-01", "a-02"}
	a.SetOrder(order)
	for _, id := range order {
		start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
		require.NoError(t, a.WriteScenario(&results.Scenario{SchemaVersion: results.SchemaVersion, ID: id, Feature: "f", Series: "a",
			Tags: []string{"@" + id}, Status: results.StatusPassed, Start: start, End: start.Add(time.Second), DurationMS: 1000}))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: order, End: time.Now()}))
	return a.Dir()
}

func TestArchivePackRefusesToReplaceAPack(t *testing.T) {
	dir := smallArchive(t)
	pack := dir + pack.PackExt
	first := flowtest(t, nil, "archive", "pack", dir)
	require.Equal(t, 0, first.code, first.stdout+first.stderr)
	before, err := os.ReadFile(pack)
	require.NoError(t, err)

	// The folder changes (a note added), and the same pack name is asked for again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), []byte("added later\n"), 0o644))
	again := flowtest(t, nil, "archive", "pack", dir)
	assert.Equal(t, 2, again.code, again.stdout+again.stderr)
	assert.Contains(t, again.stderr, pack+" exists and is not replaced")
	assert.Contains(t, again.stderr, "--force")
	after, err := os.ReadFile(pack)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the refused pack is untouched")

	forced := flowtest(t, nil, "archive", "pack", "--force", dir)
	require.Equal(t, 0, forced.code, forced.stdout+forced.stderr)
	after, err = os.ReadFile(pack)
	require.NoError(t, err)
	assert.NotEqual(t, before, after, "--force replaced it")
	v := flowtest(t, nil, "archive", "verify", pack)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
}

func TestArchiveVerifyAndPackRefuseABrokenArchive(t *testing.T) {
	dir := smallArchive(t)
	rec := filepath.Join(dir, results.ScenarioDir, "a-02.json")
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rec, data[:len(data)/2], 0o644))

	v := flowtest(t, nil, "archive", "verify", dir)
	assert.Equal(t, 1, v.code, v.stdout+v.stderr)
	assert.Contains(t, v.stdout, "integrity: scenarios/a-02.json: not valid JSON")
	assert.NotContains(t, v.stdout, "no leaks")

	p := flowtest(t, nil, "archive", "pack", dir)
	assert.Equal(t, 1, p.code, p.stdout+p.stderr)
	assert.Contains(t, p.stdout, "integrity: scenarios/a-02.json")
	assert.NoFileExists(t, dir+pack.PackExt)
}

// shardPair writes the two shard archives of a selection of a-01 and a-02: shard 1 ran a-01,
// shard 2 ran a-02, each left the other to the other shard.
func shardPair(t *testing.T) (string, string) {
	t.Helper()
	other := results.ReasonOtherShardPrefix + ": "
	s1 := archiveOf(t, []scenarioRow{{"a-01", results.StatusPassed, ""}, {"a-02", results.StatusNotRun, other + "2/2"}})
	s2 := archiveOf(t, []scenarioRow{{"a-01", results.StatusNotRun, other + "1/2"}, {"a-02", results.StatusPassed, ""}})
	return s1, s2
}

// Issue 42 item 5: a shard whose record says failed while its run.json says passed is
// refused before anything is merged; before, the merged run.json said passed (exit 0) and
// only the check after writing it named the disagreement.
func TestArchiveMergeRefusesAShardThatDoesNotHoldTogether(t *testing.T) {
	s1, s2 := shardPair(t)
	out := filepath.Join(t.TempDir(), "merged")
	ok := flowtest(t, nil, "archive", "merge", "--out", out, s1, s2)
	require.Equal(t, 0, ok.code, "the whole shards merge: "+ok.stdout+ok.stderr)

	editRecord(t, filepath.Join(s1, results.ScenarioDir, "a-01.json"), "status", results.StatusFailed)
	out = filepath.Join(t.TempDir(), "merged")
	r := flowtest(t, nil, "archive", "merge", "--out", out, s1, s2)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "flowtest archive merge: refused: archive "+s1+" is not read")
	assert.Contains(t, r.stderr, "scenarios/a-01.json: status failed, run.json says passed for a-01")
	assert.NoDirExists(t, out, "a refused merge writes nothing")

	// The merged archive may not land inside a shard either.
	s1, s2 = shardPair(t)
	r = flowtest(t, nil, "archive", "merge", "--out", filepath.Join(s2, "merged"), s1, s2)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "inside the shard archive "+s2)
	assert.NoDirExists(t, filepath.Join(s2, "merged"))
}

// Issue 42 item 6: a link to a file outside the archive (a secret in it) fails verify, as it
// fails pack; before, verify said "no leaks" of a file its scan never read.
func TestArchiveVerifyRefusesALinkOutOfTheArchive(t *testing.T) {
	dir := smallArchive(t)
	secret := writeFile(t, "secret.env", "KSQL_FLOWNET_STATE_API_TOKEN=Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk\n")
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "notes.txt")))
	v := flowtest(t, []string{"KSQL_FLOWNET_STATE_API_TOKEN=Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk"}, "archive", "verify", dir)
	assert.Equal(t, 2, v.code, v.stdout+v.stderr)
	assert.Contains(t, v.stderr, "notes.txt: a symbolic link (to "+secret+")")
	assert.NotContains(t, v.stdout, "no leaks")
	p := flowtest(t, nil, "archive", "pack", dir)
	assert.Equal(t, 2, p.code, p.stdout+p.stderr)
	assert.Contains(t, p.stderr, "notes.txt: a symbolic link")
	assert.NoFileExists(t, dir+pack.PackExt)
}

// Issue 42 item 7: a pack written into the folder it seals is refused; before, the pack and
// its digest were written into the folder and verify still passed.
func TestArchivePackRefusesAPackInsideTheFolder(t *testing.T) {
	dir := smallArchive(t)
	for _, dst := range []string{filepath.Join(dir, "self.tar.gz"), filepath.Join(dir, "logs", "self.tar.gz")} {
		r := flowtest(t, nil, "archive", "pack", "--out", dst, dir)
		assert.Equal(t, 2, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "inside the archive being packed "+dir)
		assert.NoFileExists(t, dst)
		assert.NoFileExists(t, dst+".sha256")
	}
	assert.NoDirExists(t, filepath.Join(dir, "logs"))
	file := writeFile(t, "plain.txt", "x")
	r := flowtest(t, nil, "archive", "pack", "--out", filepath.Join(file, "p.tar.gz"), dir)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "cannot be created: "+file+" is a file")
	beside := filepath.Join(filepath.Dir(dir), "beside.tar.gz")
	r = flowtest(t, nil, "archive", "pack", "--out", beside, dir)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
}

// Issue 42 item 8: an --out under a regular file is refused before anything is read or
// printed; before, evidence exited by its verdict, said nothing of --out and wrote nothing.
func TestEvidenceRefusesAnOutItCannotWrite(t *testing.T) {
	before := archiveOf(t, []scenarioRow{{"a-01", results.StatusFailed, ""}})
	after := archiveOf(t, []scenarioRow{{"a-01", results.StatusPassed, ""}})
	file := writeFile(t, "plain.txt", "x")
	ok := flowtest(t, nil, "evidence", "--before", before, "--after", after)
	require.Equal(t, 0, ok.code, "the evidence itself is green: "+ok.stdout+ok.stderr)

	for _, c := range []struct{ out, want string }{
		{filepath.Join(file, "ev.md"), "cannot be created: " + file + " is a file"},
		{filepath.Dir(file), "a directory, not a file"},
		{filepath.Join(after, "test-evidence.md"), "inside the archive " + after},
	} {
		r := flowtest(t, nil, "evidence", "--before", before, "--after", after, "--out", c.out)
		assert.Equal(t, 2, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, `flowtest evidence: --out "`+c.out+`": `+c.want)
		assert.Empty(t, r.stdout, "nothing printed before the refusal")
	}
	assert.NoFileExists(t, filepath.Join(after, "test-evidence.md"))

	// An archive whose record contradicts its run.json is no evidence: refused.
	editRecord(t, filepath.Join(before, results.ScenarioDir, "a-01.json"), "status", results.StatusPassed)
	r := flowtest(t, nil, "evidence", "--before", before, "--after", after)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "scenarios/a-01.json: status passed, run.json says failed for a-01")
}

// Issue 42 item 9: a failure of the --rerun archive that run.json shows and its record does
// not (or a failed id its records cannot back) is refused, naming the file and the archive;
// before, the rerun ran the other failures and dropped it without a word.
func TestRerunRefusesAFailureItCannotRead(t *testing.T) {
	prev := archiveWith(t, map[string]string{"m5-resume": "failed", "m5-gone": "failed"})
	editRecord(t, filepath.Join(prev, results.ScenarioDir, "m5-gone.json"), "status", results.StatusPassed)
	r := flowtest(t, nil, "run", "--dry-run", "--rerun", prev)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, `--rerun "`+prev+`": archive `+prev+" is not read")
	assert.Contains(t, r.stderr, "scenarios/m5-gone.json: status passed, run.json says failed for m5-gone")

	// The new run's archive may not be written into the one it reruns.
	ok := archiveWith(t, map[string]string{"m5-resume": "failed"})
	r = flowtest(t, nil, "run", "--dry-run", "--rerun", ok, "--out", filepath.Join(ok, "again"))
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "inside the --rerun archive "+ok)
}

// Issue 42 (principle): archive diff reads only verified archives.
func TestArchiveDiffRefusesAnArchiveThatDoesNotHoldTogether(t *testing.T) {
	a, b := diffArchive(t, "SUCCESS", 0), diffArchive(t, "SUCCESS", 0)
	editRecord(t, filepath.Join(b, results.ScenarioDir, "d-02.json"), "status", results.StatusFailed)
	r := flowtest(t, nil, "archive", "diff", a, b)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "scenarios/d-02.json: status failed, run.json says passed for d-02")
}
