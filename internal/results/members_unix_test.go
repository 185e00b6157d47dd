//go:build unix

package results

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A named pipe in an archive would block a reader for ever: it is named, not opened.
func TestMembersNamesANamedPipe(t *testing.T) {
	dir := finishedArchive(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, ScenarioDir, "p2-16-03.json"), 0o644))
	_, probs, err := Members(dir)
	require.NoError(t, err)
	assert.Contains(t, problemsText(probs), "scenarios/p2-16-03.json: a named pipe, not a regular file")
	assert.ErrorContains(t, CheckReadable(dir), "scenarios/p2-16-03.json: a named pipe")
}

// A hard link is a regular file to WalkDir, but its content may be a file outside the
// archive (a secret an operator linked in): verify would pass what it never wrote.
func TestMembersNamesAHardLink(t *testing.T) {
	dir := finishedArchive(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("outside"), 0o600))
	if err := os.Link(outside, filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("no hard links between these folders: %v", err)
	}
	_, probs, err := Members(dir)
	require.NoError(t, err)
	assert.Contains(t, problemsText(probs), "notes.txt: a file with 2 names (a hard link)")
	assert.ErrorContains(t, CheckReadable(dir), "notes.txt: a file with 2 names")
}
