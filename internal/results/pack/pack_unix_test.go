//go:build unix

package pack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
)

// Pack lists an archive with results.Members, as verify does: a hard-linked member, whose
// content may be a file outside the archive, is not sealed into a pack verify would refuse.
func TestPackRefusesAHardLinkedMember(t *testing.T) {
	dir := archivetest.Finished(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("outside"), 0o600))
	if err := os.Link(outside, filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("no hard links between these folders: %v", err)
	}
	_, err := Pack(dir, filepath.Join(t.TempDir(), "a"+PackExt))
	assert.ErrorContains(t, err, "notes.txt is not a regular file: a file with 2 names (a hard link)")
}
