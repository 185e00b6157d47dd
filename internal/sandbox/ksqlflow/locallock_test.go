package ksqlflow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lock file that exists but cannot be parsed yet (its holder is between the exclusive
// create and the write) is held, not stale: only its age makes it stale (§7: "older than
// batchTimeoutSec").
func TestLocalLockUnreadableFileIsHeldUntilOld(t *testing.T) {
	dir := t.TempDir()
	path := localLockPath(dir, testProfile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	me := localLock{PID: os.Getpid(), Host: "h", Profile: testProfile, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), BatchID: "b"}

	_, err := acquireLocalLock(dir, me, time.Hour)
	var held *localLockHeld
	require.True(t, errors.As(err, &held), "a fresh unreadable lock file is held: %v", err)
	assert.FileExists(t, path)

	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
	release, err := acquireLocalLock(dir, me, time.Hour)
	require.NoError(t, err, "an unreadable lock file older than the batch timeout is stale")
	release()
	assert.NoFileExists(t, path)
}
