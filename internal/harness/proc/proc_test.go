package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

func spec(t *testing.T, name, mode string, args ...string) Spec {
	return Spec{Name: name, Path: self(t), Args: append([]string{"proctest-helper"}, args...),
		Env: []string{"PROCTEST_MODE=" + mode}, Dir: t.TempDir(), LogDir: t.TempDir()}
}

func quietCtx() context.Context {
	return wait.WithConfig(context.Background(), wait.Config{Progress: discard{}})
}

// waitStdout waits until the process's stdout satisfies ok.
func waitStdout(t *testing.T, p *Process, what string, ok func(string) bool) string {
	t.Helper()
	var out string
	require.NoError(t, wait.Until(quietCtx(), what, 15*time.Second, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		s, err := p.Stdout()
		out = s
		return ok(s), fmt.Sprintf("stdout %q", s), err
	}))
	return out
}

var pidLine = regexp.MustCompile(`pid (\d+) level (\d+)`)

// startThreeLevels starts the helper under name as three levels of processes (mode tree or
// orphan) tagged with a fresh marker, and returns it, its pids by level and the marker.
func startThreeLevels(t *testing.T, r *Registry, name, mode, prefix string) (*Process, map[int]int32, string) {
	t.Helper()
	marker := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	p, err := r.Start(context.Background(), spec(t, name, mode, "--level", "2", "--marker", marker))
	require.NoError(t, err)
	return p, treePids(t, p, 3), marker
}

// treePids waits for a tree helper to report n levels and returns pid by level.
func treePids(t *testing.T, p *Process, n int) map[int]int32 {
	t.Helper()
	out := waitStdout(t, p, fmt.Sprintf("%d levels to report", n), func(s string) bool {
		return len(pidLine.FindAllString(s, -1)) >= n
	})
	pids := map[int]int32{}
	for _, m := range pidLine.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		lvl, _ := strconv.Atoi(m[2])
		pids[lvl] = int32(pid)
	}
	require.Len(t, pids, n)
	return pids
}

func TestExplicitEnvironmentIsExactlyWhatIsListed(t *testing.T) {
	r := CheckLeaks(t)
	t.Setenv("PROCTEST_LEAK_CANARY", "must-not-reach-child")
	t.Setenv("GODOG_SEED", "12345")
	s := spec(t, "env", "env")
	s.Env = append(s.Env, "FOO=bar", "FOO=baz")
	p, err := r.Start(context.Background(), s)
	require.NoError(t, err)
	res, err := p.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, p.StderrTail())

	out, err := p.Stdout()
	require.NoError(t, err)
	var env []string
	require.NoError(t, json.Unmarshal([]byte(out), &env))
	if runtime.GOOS == "windows" {
		// Go adds SYSTEMROOT on Windows so the child can load system DLLs.
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(strings.ToUpper(kv), "SYSTEMROOT=") })
	}
	assert.ElementsMatch(t, []string{"PROCTEST_MODE=env", "FOO=baz"}, env)
}

func TestNilEnvironmentMeansEmpty(t *testing.T) {
	envPath, err := exec.LookPath("env")
	if err != nil || runtime.GOOS == "windows" {
		t.Skip("needs the Unix env utility")
	}
	r := CheckLeaks(t)
	t.Setenv("PROCTEST_LEAK_CANARY", "must-not-reach-child")
	p, err := r.Start(context.Background(), Spec{Name: "env-nil", Path: envPath, Dir: t.TempDir(), LogDir: t.TempDir()})
	require.NoError(t, err)
	res, err := p.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	out, err := p.Stdout()
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(out))
}

func TestStartRefusesGodogVariablesAndIncompleteSpecs(t *testing.T) {
	s := spec(t, "godog", "env")
	s.Env = append(s.Env, "GODOG_TESTED_PACKAGE=x")
	_, err := Start(context.Background(), s)
	require.ErrorContains(t, err, "GODOG_TESTED_PACKAGE")

	s = spec(t, "bad-entry", "env")
	s.Env = append(s.Env, "SECRET_TOKEN_VALUE_WITHOUT_EQUALS")
	_, err = Start(context.Background(), s)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "SECRET_TOKEN", "a malformed entry may be a token: never echo it")

	s = spec(t, "nodir", "env")
	s.Dir = ""
	_, err = Start(context.Background(), s)
	require.ErrorContains(t, err, "Dir")
}

func TestExitCodeCaptureTailsAndRegistryFromContext(t *testing.T) {
	r := CheckLeaks(t)
	s := spec(t, "flownet run", "exit")
	s.Env = append(s.Env, "PROCTEST_CODE=3")
	p, err := Start(WithRegistry(context.Background(), r), s)
	require.NoError(t, err)
	res, err := p.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.True(t, res.Abnormal())
	assert.Contains(t, p.StdoutTail(), "out-line")
	assert.Contains(t, p.StderrTail(), "err-line")
	assert.FileExists(t, p.StdoutPath())
	assert.Contains(t, p.StdoutPath(), "flownet_run.stdout.log")
	require.Len(t, r.Processes(), 1)

	out, err := p.Stdout()
	require.NoError(t, err)
	obj, ok := LastJSONLine(out, func(o map[string]any) bool { return o["kind"] == "LOCK_INSPECTION_RESULT" })
	require.True(t, ok)
	assert.Equal(t, true, obj["held"])

	// Same name again gets its own files, and the tail survives removal of the files.
	p2, err := r.Start(context.Background(), Spec{Name: s.Name, Path: s.Path, Args: s.Args, Env: s.Env, Dir: s.Dir, LogDir: s.LogDir})
	require.NoError(t, err)
	_, err = p2.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	assert.NotEqual(t, p.StdoutPath(), p2.StdoutPath())
	require.NoError(t, os.RemoveAll(s.LogDir))
	assert.Contains(t, p2.StdoutTail(), "out-line")
	rec := p2.Record()
	require.NotNil(t, rec.ExitCode, "exited, not killed: %+v", rec)
	assert.Equal(t, 3, *rec.ExitCode)
	assert.Contains(t, rec.StdoutTail, "out-line")
}

func TestTailIsBounded(t *testing.T) {
	r := CheckLeaks(t)
	p, err := r.Start(context.Background(), spec(t, "spam", "spam"))
	require.NoError(t, err)
	_, err = p.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	tail := p.StdoutTail()
	assert.LessOrEqual(t, len(tail), TailBytes)
	assert.True(t, strings.HasSuffix(tail, "END\n"))
	full, err := p.Stdout()
	require.NoError(t, err)
	assert.Greater(t, len(full), 100_000)
}

func TestWaitDeadlineThenStopKillsWhenSignalIgnored(t *testing.T) {
	r := CheckLeaks(t)
	p, err := r.Start(context.Background(), spec(t, "stubborn", "ignore"))
	require.NoError(t, err)
	waitStdout(t, p, "helper ready", func(s string) bool { return strings.Contains(s, "ready") })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Wait(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stubborn")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	res, err := p.Stop(200 * time.Millisecond)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, "SIGKILL", res.Signal)
		assert.Equal(t, -1, res.ExitCode)
	}
	assert.True(t, res.Abnormal())
}

func TestStopIsGracefulWhenChildHandlesInterrupt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("CTRL_BREAK needs a shared console; covered by the windows scenarios")
	}
	r := CheckLeaks(t)
	p, err := r.Start(context.Background(), spec(t, "graceful", "trap"))
	require.NoError(t, err)
	waitStdout(t, p, "helper ready", func(s string) bool { return strings.Contains(s, "ready") })
	res, err := p.Stop(10 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 7, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.Contains(t, p.StdoutTail(), "got interrupt")
	assert.Empty(t, p.KilledPids())
}

func TestKillTreeOfThreeLevelsLeavesNothing(t *testing.T) {
	r := CheckLeaks(t)
	p, pids, marker := startThreeLevels(t, r, "tree", "tree", "tree")
	require.Equal(t, int32(p.Pid()), pids[2])

	killed, err := p.KillTree()
	require.NoError(t, err)
	assert.ElementsMatch(t, []int32{pids[0], pids[1], pids[2]}, killed)
	for lvl, pid := range pids {
		assert.False(t, PidAlive(context.Background(), pid), "level %d pid %d survived", lvl, pid)
	}
	left, err := FindByArgv(context.Background(), ArgvContains(marker))
	require.NoError(t, err)
	assert.Empty(t, left)
	res, ok := p.Exited()
	require.True(t, ok)
	if runtime.GOOS != "windows" {
		assert.Equal(t, "SIGKILL", res.Signal)
	}
}

// A tree killed deepest first is stopped first, so its parent never outlives its child long
// enough to notice (a FlowNet would record its child's attempt as ended).
func TestKillTreeGivesTheParentNoChanceToReact(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot stop a process from outside; its deepest-first kill is unfrozen")
	}
	r := CheckLeaks(t)
	for i := 0; i < 20; i++ {
		p, err := r.Start(context.Background(), spec(t, "watcher", "watcher"))
		require.NoError(t, err)
		treePids(t, p, 2)
		_, err = p.KillTree()
		require.NoError(t, err)
		out, err := p.Stdout()
		require.NoError(t, err)
		require.NotContains(t, out, "child died", "round %d", i)
	}
}

func TestKillTreeReachesOrphanedGrandchild(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no process groups; orphans are out of reach by design")
	}
	r := CheckLeaks(t)
	p, pids, _ := startThreeLevels(t, r, "orphaner", "orphan", "orphan")
	// The middle level exits on its own; the grandchild is reparented away from the root.
	require.NoError(t, wait.Until(quietCtx(), "middle level to exit", 15*time.Second, 5*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		return !PidAlive(ctx, pids[1]), "", nil
	}))
	require.True(t, PidAlive(context.Background(), pids[0]))

	killed, err := p.KillTree()
	require.NoError(t, err)
	assert.Contains(t, killed, pids[0])
	assert.False(t, PidAlive(context.Background(), pids[0]))
}

func TestFindByArgvPicksExactlyTheGrandchild(t *testing.T) {
	r := CheckLeaks(t)
	_, pids, marker := startThreeLevels(t, r, "tree", "tree", "find")

	grandchild := AllOf(ArgvHasSeq("--level", "0"), ArgvContains(marker))
	found, err := FindByArgv(context.Background(), grandchild)
	require.NoError(t, err)
	assert.Equal(t, []int32{pids[0]}, found)

	// All three match the marker: still one tree, rooted at the top.
	tree, _, err := FindOneTree(context.Background(), "whole helper tree", ArgvContains(marker))
	require.NoError(t, err)
	assert.Equal(t, pids[2], tree.Root)
	assert.ElementsMatch(t, []int32{pids[0], pids[1], pids[2]}, tree.Matched)

	_, _, err = FindOneTree(context.Background(), "nothing", ArgvContains(marker+"-absent"))
	require.ErrorContains(t, err, "no running process matches")

	tree, killed, err := KillOneTree(context.Background(), "grandchild", grandchild)
	require.NoError(t, err)
	assert.Equal(t, pids[0], tree.Root)
	assert.Equal(t, []int32{pids[0]}, killed)
	assert.False(t, PidAlive(context.Background(), pids[0]))
	assert.True(t, PidAlive(context.Background(), pids[1]), "only the intended grandchild is killed")
	assert.True(t, PidAlive(context.Background(), pids[2]))

	killedAll, err := r.KillAll()
	require.NoError(t, err)
	require.Len(t, killedAll, 1)
	assert.ElementsMatch(t, []int32{pids[1], pids[2]}, killedAll[0].Pids)
}

func TestFindOneTreeRefusesTwoTrees(t *testing.T) {
	r := CheckLeaks(t)
	marker := fmt.Sprintf("two-%d", time.Now().UnixNano())
	a, err := r.Start(context.Background(), spec(t, "a", "tree", "--level", "0", "--marker", marker))
	require.NoError(t, err)
	b, err := r.Start(context.Background(), spec(t, "b", "tree", "--level", "0", "--marker", marker))
	require.NoError(t, err)
	treePids(t, a, 1)
	treePids(t, b, 1)
	_, _, err = FindOneTree(context.Background(), "attempt child", ArgvContains(marker))
	require.ErrorContains(t, err, "expected exactly one matching process tree, found 2")
	_, killed, err := KillOneTree(context.Background(), "attempt child", ArgvContains(marker))
	require.Error(t, err)
	assert.Empty(t, killed, "nothing is killed when the match is ambiguous")
	_, err = r.KillAll()
	require.NoError(t, err)
}

func TestKillParentOnlyLeavesOrphansForKillAll(t *testing.T) {
	r := CheckLeaks(t)
	p, pids, marker := startThreeLevels(t, r, "flownet", "tree", "parent")
	require.NoError(t, p.Kill())
	res, err := p.WaitTimeout(10 * time.Second)
	require.NoError(t, err)
	assert.True(t, res.Abnormal())
	assert.True(t, PidAlive(context.Background(), pids[1]), "a parent-only kill leaves the children running")

	if runtime.GOOS == "windows" {
		// Orphans are out of the registry's reach on Windows; clean them up by argv.
		_, _, err := KillOneTree(context.Background(), "orphans", AllOf(ArgvHasSeq("--level", "1"), ArgvContains(marker)))
		require.NoError(t, err)
		return
	}
	survivors, err := r.Survivors(context.Background())
	require.NoError(t, err)
	var sp []int32
	for _, s := range survivors {
		sp = append(sp, s.Pid)
	}
	assert.ElementsMatch(t, []int32{pids[0], pids[1]}, sp)

	killed, err := r.KillAll()
	require.NoError(t, err)
	require.Len(t, killed, 1)
	assert.Equal(t, "flownet", killed[0].Name)
	assert.ElementsMatch(t, []int32{pids[0], pids[1]}, killed[0].Pids)
}

type fakeTB struct {
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCheckLeaksFailsTheTestAndKillsSurvivors(t *testing.T) {
	outer := CheckLeaks(t) // the real leak check for this test itself
	_ = outer
	fake := &fakeTB{}
	r := CheckLeaks(fake)
	p, err := r.Start(context.Background(), spec(t, "leaky", "ignore"))
	require.NoError(t, err)
	waitStdout(t, p, "helper ready", func(s string) bool { return strings.Contains(s, "ready") })

	fake.runCleanups()
	require.Len(t, fake.errs, 1)
	assert.Contains(t, fake.errs[0], "processes outlived the test")
	assert.Contains(t, fake.errs[0], strconv.Itoa(p.Pid()))
	_, exited := p.Exited()
	assert.True(t, exited, "the leak check kills what it reports")

	clean := &fakeTB{}
	r2 := CheckLeaks(clean)
	p2, err := r2.Start(context.Background(), spec(t, "tidy", "exit"))
	require.NoError(t, err)
	_, err = p2.WaitTimeout(15 * time.Second)
	require.NoError(t, err)
	clean.runCleanups()
	assert.Empty(t, clean.errs)
}
