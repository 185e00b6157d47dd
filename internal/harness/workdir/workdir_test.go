package workdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAlive makes the given pids the only live owners.
func fakeAlive(t *testing.T, pids ...int) {
	t.Helper()
	old := alive
	live := map[int]bool{}
	for _, p := range pids {
		live[p] = true
	}
	alive = func(o Owner) bool { return live[o.PID] }
	t.Cleanup(func() { alive = old })
}

// dirOf makes a work dir in parent and rewrites its owner as pid.
func dirOf(t *testing.T, parent string, pid int, keep bool) string {
	t.Helper()
	d, err := Create(parent, keep)
	require.NoError(t, err)
	d.owner.PID = pid
	require.NoError(t, d.write())
	require.NoError(t, os.WriteFile(filepath.Join(d.Path(), "kintone.log"), make([]byte, 3000), 0o600))
	return d.Path()
}

func TestCreateNamesItsOwner(t *testing.T) {
	parent := t.TempDir()
	d, err := Create(parent, false)
	require.NoError(t, err)
	require.NoError(t, d.AddScopes("KSQL_FLOW_TEST_261201100000_abcd_x"))
	ents, err := List(parent)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, os.Getpid(), ents[0].Owner.PID)
	assert.NotZero(t, ents[0].Owner.ProcStartMs)
	assert.Equal(t, []string{"KSQL_FLOW_TEST_261201100000_abcd_x"}, ents[0].Owner.Scopes)
	assert.True(t, ents[0].Alive, "this process is alive by the real rule")
}

func TestRemoveDeadTouchesOnlyDeadOwnersDirs(t *testing.T) {
	parent := t.TempDir()
	dead := dirOf(t, parent, 111, false)
	kept := dirOf(t, parent, 222, true)
	live := dirOf(t, parent, 333, false)
	noOwner := filepath.Join(parent, Prefix+"being-created")
	require.NoError(t, os.Mkdir(noOwner, 0o700))
	other := filepath.Join(parent, "someone-else")
	require.NoError(t, os.Mkdir(other, 0o700))
	fakeAlive(t, 333)

	rep, err := RemoveDead(parent)
	require.NoError(t, err)
	require.Len(t, rep.Removed, 1)
	assert.Equal(t, dead, rep.Removed[0].Path)
	require.Len(t, rep.Kept, 1)
	assert.Equal(t, kept, rep.Kept[0].Path)
	assert.NoDirExists(t, dead)
	for _, d := range []string{kept, live, noOwner, other} {
		assert.DirExists(t, d)
	}
	line := rep.Line()
	assert.Contains(t, line, "removed 1 work dir(s) of dead runs")
	assert.Contains(t, line, dead+" (pid 111")
	assert.Contains(t, line, "kept 1 work dir(s) of dead runs made with --keep-workdirs")
	assert.Contains(t, line, kept+" (pid 222")
	assert.NotContains(t, line, live)

	rep, err = RemoveDead(parent)
	require.NoError(t, err)
	assert.Empty(t, rep.Removed)
	assert.NotEmpty(t, rep.Line(), "a kept dir is listed every time")

	fakeAlive(t, 222, 333)
	rep, err = RemoveDead(parent)
	require.NoError(t, err)
	assert.Empty(t, rep.Line(), "nothing dead: nothing said")
}

// The real liveness rule: a pid that does not exist is dead; another host is never presumed dead.
func TestAliveRule(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.False(t, alive(Owner{PID: 1 << 22, Host: host}), "no such pid")
	assert.True(t, alive(Owner{PID: 1 << 22, Host: host + "-elsewhere"}), "another host")
	assert.False(t, alive(Owner{PID: os.Getpid(), Host: host, ProcStartMs: 1}), "this pid, but started at another time: a reused pid")
}
