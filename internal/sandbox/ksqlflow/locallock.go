package ksqlflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// localLock is the per-working-directory lock `.ksql/lock-<sanitized profile>.json`, taken
// before the distributed job lock. The contract describes it for standalone mode; the M5
// lock-conflict scenario shows the orchestrator-mode holder takes it as well (two processes
// of one profile in one cwd collide locally with exit 5), so the sandbox takes it in both
// modes. `--lock local-only` (no JOB-log lock) is standalone-only.
type localLock struct {
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Profile   string `json:"profile"`
	StartedAt string `json:"startedAt"`
	BatchID   string `json:"batchId"`
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func localLockPath(dir, profile string) string {
	return filepath.Join(dir, ".ksql", "lock-"+unsafeFileChars.ReplaceAllString(profile, "_")+".json")
}

// localLockHeld is a live local lock (LOCK_CONFLICT).
type localLockHeld struct {
	path string
	by   localLock
}

func (e *localLockHeld) Error() string {
	return fmt.Sprintf("local lock %s is held by pid %d on %s since %s (batch %s)", e.path, e.by.PID, e.by.Host, e.by.StartedAt, e.by.BatchID)
}

// acquireLocalLock creates the lock file exclusively. An existing file is stale when its
// process (same host) is gone or it is older than batchTimeout (for a file whose content
// cannot be read: its modification time); a stale file is removed and the create tried
// again once.
func acquireLocalLock(dir string, l localLock, batchTimeout time.Duration) (release func(), err error) {
	path := localLockPath(dir, l.Profile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create local lock dir: %w", err)
	}
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	for try := 0; try < 2; try++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.Write(data)
			cerr := f.Close()
			if werr != nil || cerr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("write local lock %s: %v %v", path, werr, cerr)
			}
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create local lock %s: %w", path, err)
		}
		var held localLock
		raw, rerr := os.ReadFile(path)
		if rerr == nil && json.Unmarshal(raw, &held) == nil {
			if !localLockStale(held, l.Host, batchTimeout) {
				return nil, &localLockHeld{path: path, by: held}
			}
		} else if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) <= batchTimeout {
			// Unreadable content may be a holder between its exclusive create and its write:
			// only age (older than batchTimeoutSec) makes such a file stale, or two processes
			// could both take the lock.
			return nil, &localLockHeld{path: path, by: localLock{Profile: l.Profile, StartedAt: fi.ModTime().UTC().Format(time.RFC3339Nano)}}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale local lock %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("local lock %s: re-created by another process while replacing a stale one", path)
}

func localLockStale(l localLock, host string, batchTimeout time.Duration) bool {
	if t, err := time.Parse(time.RFC3339Nano, l.StartedAt); err == nil && time.Since(t) > batchTimeout {
		return true
	}
	return l.Host == host && !processAlive(l.PID)
}
