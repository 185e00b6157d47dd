//go:build unix

package results

import (
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
