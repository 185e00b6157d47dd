package runlock

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const base = "https://example.cybozu.com"

func alwaysAlive(Holder) bool { return true }

// deadPID returns the pid of a process that has exited (this test binary,
// run with no tests).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func writeHolder(t *testing.T, path string, h Holder) {
	t.Helper()
	b, err := json.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestSecondRunnerRefusedNamingHolder(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 29, 22, 40, 0, 0, time.UTC)
	first, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4257", "4258"}, PID: 4242, Host: "build-1", Now: func() time.Time { return started }, Alive: alwaysAlive})
	require.NoError(t, err)
	require.Len(t, first.Paths(), 2)

	_, err = Acquire(Options{Dir: dir, BaseURL: base + "/", AppIDs: []string{"4258", "4264"}, PID: 5151, Host: "build-1", Alive: alwaysAlive})
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, 4242, held.Holder.PID)
	msg := err.Error()
	for _, want := range []string{"pid 4242", "host build-1", "2026-11-29T22:40:00Z", "app 4258", held.Path} {
		require.Contains(t, msg, want)
	}
	// The refused runner kept nothing: the 4264 lock it may have taken first
	// was released.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "only the first runner's files")

	require.NoError(t, first.Release())
	second, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4258", "4264"}, PID: 5151, Host: "build-1", Alive: alwaysAlive})
	require.NoError(t, err, "free after release")
	require.NoError(t, second.Release())
	require.NoError(t, second.Release(), "release twice is harmless")
}

func TestEnvironmentKeying(t *testing.T) {
	cases := []struct {
		name     string
		url      string
		apps     []string
		conflict bool
	}{
		{"same apps", base, []string{"4257"}, true},
		{"overlapping apps", base, []string{"9999", "4257"}, true},
		{"case and trailing slash", "HTTPS://Example.Cybozu.com/", []string{"4257"}, true},
		{"default port", "https://example.cybozu.com:443", []string{"4257"}, true},
		{"user-info ignored", "https://u:p@example.cybozu.com", []string{"4257"}, true},
		{"disjoint apps", base, []string{"4300"}, false},
		{"other tenant", "https://other.cybozu.com", []string{"4257"}, false},
		{"other port", "https://example.cybozu.com:8443", []string{"4257"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4257", "4258"}, PID: 1, Host: "h", Alive: alwaysAlive})
			require.NoError(t, err)
			defer l.Release()
			l2, err := Acquire(Options{Dir: dir, BaseURL: tc.url, AppIDs: tc.apps, PID: 2, Host: "h", Alive: alwaysAlive})
			if tc.conflict {
				var held *HeldError
				require.ErrorAs(t, err, &held)
				require.NotContains(t, err.Error(), "u:p")
				return
			}
			require.NoError(t, err)
			require.NoError(t, l2.Release())
		})
	}
}

func TestStaleLockReclaimedWithWarning(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	dir := t.TempDir()
	l, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4257"}})
	require.NoError(t, err)
	path := l.Paths()[0]
	// Turn the file into one left behind by a dead process on this host.
	h, err := readHolder(path)
	require.NoError(t, err)
	h.PID, h.ProcStartMs, h.Nonce = deadPID(t), 0, "deadbeef"
	writeHolder(t, path, h)

	var warnings []string
	l2, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4257"}, Warn: func(m string) { warnings = append(warnings, m) }})
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "reclaimed stale run lock")
	require.Contains(t, warnings[0], host)
	got, err := readHolder(path)
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), got.PID)

	require.NoError(t, l.Release(), "the old handle no longer owns the file")
	_, err = os.Stat(path)
	require.NoError(t, err, "releasing the reclaimed handle must not remove the new holder's file")
	require.NoError(t, l2.Release())
	_, err = os.Stat(path)
	require.True(t, errors.Is(err, os.ErrNotExist))
}

func TestLiveHolderOnSameHostIsNotReclaimed(t *testing.T) {
	dir := t.TempDir()
	// Real liveness: the holder is this very process (different nonce, as
	// a second runner would see it).
	l, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}})
	require.NoError(t, err)
	defer l.Release()
	_, err = Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}})
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, os.Getpid(), held.Holder.PID)
}

func TestReusedPIDIsStale(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	path := filepath.Join(dir, "flowtest-"+shortHash(base+" app 1")+".lock")
	// Our pid, but a creation time an hour off: the holder was another
	// process that had this pid.
	me, err := self(Options{})
	require.NoError(t, err)
	require.NotZero(t, me.ProcStartMs, "process creation time is available on this platform")
	writeHolder(t, path, Holder{PID: os.Getpid(), Host: host, Started: time.Now(), ProcStartMs: me.ProcStartMs - 3600_000, Environment: base + " app 1", Nonce: "old"})
	var warned bool
	l, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}, Warn: func(string) { warned = true }})
	require.NoError(t, err)
	require.True(t, warned)
	require.NoError(t, l.Release())
}

func TestDeadHolderOnOtherHostIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flowtest-"+shortHash(base+" app 1")+".lock")
	writeHolder(t, path, Holder{PID: deadPID(t), Host: "some-other-host", Started: time.Now(), Environment: base + " app 1", Nonce: "x"})
	_, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}})
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.Contains(t, err.Error(), "some-other-host")
}

func TestUnreadableLockFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flowtest-"+shortHash(base+" app 1")+".lock")
	require.NoError(t, os.WriteFile(path, []byte("{garbage"), 0o644))
	_, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}})
	require.ErrorContains(t, err, "unreadable")
	require.ErrorContains(t, err, path)
}

func TestBadOptions(t *testing.T) {
	_, err := Acquire(Options{BaseURL: base})
	require.Error(t, err)
	_, err = Acquire(Options{Dir: t.TempDir(), BaseURL: "example.cybozu.com"})
	require.Error(t, err)
}

func TestConcurrentRunnersExactlyOneWins(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners, refused := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"4257", "4258"}, PID: 1000 + i, Host: "h", Alive: alwaysAlive})
			mu.Lock()
			defer mu.Unlock()
			var held *HeldError
			switch {
			case err == nil:
				winners++
			case errors.As(err, &held):
				refused++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, winners)
	require.Equal(t, n-1, refused)
}

func TestConcurrentReclaimOfStaleLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "flowtest-"+shortHash(base+" app 1")+".lock")
	writeHolder(t, path, Holder{PID: 1, Host: "h", Started: time.Now(), Environment: base + " app 1", Nonce: "stale"})
	// Only the stale holder (pid 1 here) is dead; every racer is alive.
	alive := func(h Holder) bool { return h.PID != 1 }
	const n = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []int
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Acquire(Options{Dir: dir, BaseURL: base, AppIDs: []string{"1"}, PID: 100 + i, Host: "h", Alive: alive})
			if err == nil {
				mu.Lock()
				winners = append(winners, 100+i)
				mu.Unlock()
				return
			}
			var held *HeldError
			if !errors.As(err, &held) && !strings.Contains(err.Error(), "racing") {
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, winners, 1, "exactly one racer reclaims the stale lock")
	h, err := readHolder(path)
	require.NoError(t, err)
	require.Equal(t, winners[0], h.PID, "the file names the winner")
	left, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left behind")
}
