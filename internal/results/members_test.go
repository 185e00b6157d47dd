package results

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An archive member that is a link or a special file is named, wherever it is; the folder
// itself may be reached through a link.
func TestMembersNamesLinksAndSpecialFiles(t *testing.T) {
	dir := finishedArchive(t)
	files, probs, err := Members(dir)
	require.NoError(t, err)
	assert.Empty(t, probs)
	assert.Contains(t, files, "run.json")
	assert.Contains(t, files, "scenarios/p2-16-02.json")

	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("token"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "logs", "flownet.log")))
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "elsewhere")))
	files, probs, err = Members(dir)
	require.NoError(t, err)
	got := problemsText(probs)
	assert.Contains(t, got, "logs/flownet.log: a symbolic link (to "+outside+")")
	assert.Contains(t, got, "elsewhere: a symbolic link")
	assert.NotContains(t, files, "logs/flownet.log")

	link := filepath.Join(t.TempDir(), "latest")
	require.NoError(t, os.Symlink(dir, link))
	_, probs, err = Members(link)
	require.NoError(t, err)
	assert.NotEmpty(t, probs, "the folder reached through a link is still walked")
}

// ReadVerified reads nothing of an archive whose records and run.json disagree or that
// holds a link: the error names the archive and each file.
func TestReadVerifiedRefusesWhatCheckReadableFinds(t *testing.T) {
	dir := finishedArchive(t)
	scen, run, err := ReadVerified(dir)
	require.NoError(t, err)
	assert.Len(t, scen, 2)
	assert.Equal(t, RunComplete, run.State)

	editJSON(t, filepath.Join(dir, ScenarioDir, "p2-16-01.json"), func(m map[string]any) { m["status"] = StatusFailed })
	_, _, err = ReadVerified(dir)
	var ref *Refused
	require.ErrorAs(t, err, &ref)
	assert.ErrorContains(t, err, "archive "+dir+" is not read")
	assert.ErrorContains(t, err, "scenarios/p2-16-01.json: status failed, run.json says passed for p2-16-01")

	dir = finishedArchive(t)
	require.NoError(t, os.Symlink(filepath.Join(dir, "run.json"), filepath.Join(dir, "run-copy.json")))
	_, _, err = ReadVerified(dir)
	assert.ErrorContains(t, err, "run-copy.json: a symbolic link")

	_, _, err = ReadVerified(t.TempDir())
	assert.ErrorContains(t, err, "is not a flowtest archive")
}

// --rerun reads the failures from an archive only when its run.json and records agree: a
// failure run.json lists whose record says otherwise is not dropped from the rerun silently.
func TestFailedScenariosRefusesAFailureOnlyRunJSONShows(t *testing.T) {
	dir := finishedArchive(t)
	editJSON(t, filepath.Join(dir, ScenarioDir, "p2-16-02.json"), func(m map[string]any) { m["status"] = StatusPassed })
	ids, err := FailedScenarios(dir)
	assert.Empty(t, ids)
	assert.ErrorContains(t, err, "scenarios/p2-16-02.json: status passed, run.json says failed for p2-16-02")
}
