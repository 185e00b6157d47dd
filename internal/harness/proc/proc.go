// Package proc starts, watches and kills the child processes of a scenario
// (FlowNet CLI runs, pollers, kSQL-Flow helpers), on Linux, macOS and Windows.
//
// Rules it enforces:
//   - A child gets exactly the environment the caller lists in Spec.Env: nothing is
//     inherited by accident, and godog's GODOG_* variables are refused outright.
//   - stdout and stderr go straight to files in Spec.LogDir (the scenario work dir).
//     The child writes into the files itself, so a grandchild that inherits the
//     handles can never make Wait hang on a pipe; tails (8 KiB) are read back from
//     the files and kept in memory once the process ends.
//   - The lifetime of a child is not tied to the context given to Start: a poller
//     started in one step is stopped in another. Children end through Stop, Kill,
//     KillTree, or the scenario Registry's KillAll in the After hook.
//   - On Unix every child leads its own process group, so a tree kill also reaches
//     grandchildren whose parent already died (they stay in the group). A side effect:
//     children are not in the terminal's foreground group, so Ctrl-C at the runner does
//     not reach them; the runner's cleanup kills them instead. Descendants that call
//     setsid themselves escape the group; those are still found by the parent walk
//     while their parent lives.
//   - Windows has no process groups to kill: trees are walked by parent pid
//     (gopsutil snapshot) and killed deepest first. Children are started with
//     CREATE_NEW_PROCESS_GROUP so that a graceful stop can send CTRL_BREAK to them.
package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// TailBytes bounds the in-memory stdout/stderr tails kept per process (the original
// harness kept 8,000 characters).
const TailBytes = 8 << 10

// Spec describes a child process.
type Spec struct {
	// Name labels the process in logs, file names and the scenario record ("poller-1").
	Name string
	// Path is the executable. It is used as given: no PATH lookup, because the child's
	// PATH is whatever Env says, not the runner's (resolve it with exec.LookPath first
	// if needed).
	Path string
	// Args are the arguments after argv[0].
	Args []string
	// Env is exactly the environment the child gets ("KEY=value"). nil or empty means an
	// empty environment (on Windows Go adds SYSTEMROOT, which programs need to start).
	// Later duplicates win, as in os/exec. Any GODOG_* entry is an error.
	Env []string
	// Dir is the working directory; "" is an error, so a child never runs in the runner's
	// own directory by accident.
	Dir string
	// LogDir receives <Name>.stdout.log and <Name>.stderr.log.
	LogDir string
	// ParentPipe makes the child's stdin a pipe whose write end only the runner holds, until
	// the child is reaped: end of file on stdin tells the child that the runner is gone (for
	// a server that should exit then; see lifeline.go). Without it stdin is the null device.
	ParentPipe bool
}

// Result is how a process ended.
type Result struct {
	// ExitCode is the exit status, or -1 when the process was ended by a signal.
	ExitCode int
	// Signal names the terminating signal ("killed", "interrupt", …) on Unix; always ""
	// on Windows, where a killed process simply exits with code 1.
	Signal string
	// Duration is the wall time from start to exit.
	Duration time.Duration
	// Err reports a failure to wait for the process (not a non-zero exit).
	Err error
}

// Abnormal reports whether the process did not exit with code 0.
func (r Result) Abnormal() bool { return r.ExitCode != 0 || r.Signal != "" }

func (r Result) String() string {
	switch {
	case r.Err != nil:
		return fmt.Sprintf("wait failed after %s: %v", r.Duration.Round(time.Millisecond), r.Err)
	case r.Signal != "":
		return fmt.Sprintf("signal %s after %s", r.Signal, r.Duration.Round(time.Millisecond))
	default:
		return fmt.Sprintf("exit %d after %s", r.ExitCode, r.Duration.Round(time.Millisecond))
	}
}

// Process is a started child.
type Process struct {
	spec       Spec
	cmd        *exec.Cmd
	lifeline   *os.File // write end of the child's stdin (Spec.ParentPipe); closed when reaped
	pid        int
	started    time.Time
	stdoutPath string
	stderrPath string

	done   chan struct{}
	result Result // valid once done is closed

	mu         sync.Mutex
	stdoutTail string // snapshots taken at exit; used if the files are gone later
	stderrTail string
	killed     []int32
}

// Start starts the child described by spec. If ctx carries a Registry (WithRegistry),
// the process is registered there. ctx bounds nothing else; see the package comment.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	p, err := start(spec)
	if err != nil {
		return nil, err
	}
	if r := RegistryFrom(ctx); r != nil {
		r.add(p)
	}
	return p, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func start(spec Spec) (*Process, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("start %s: log dir: %w", spec.Name, err)
	}
	base := unsafeName.ReplaceAllString(spec.Name, "_")
	stdoutPath, stdout, err := createUnique(spec.LogDir, base, ".stdout.log")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	defer stdout.Close() // the child holds its own copy after Start
	stderrPath, stderr, err := createUnique(spec.LogDir, base, ".stderr.log")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	defer stderr.Close()

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append([]string{}, spec.Env...) // non-nil: an empty list must not mean "inherit"
	cmd.Dir = spec.Dir
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = sysProcAttr()
	var lifeline *os.File
	if spec.ParentPipe {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start %s: parent pipe: %w", spec.Name, err)
		}
		defer r.Close() // the child holds its own copy after Start
		cmd.Stdin, lifeline = r, w
	}

	started := time.Now()
	if err := startRetryingBusy(cmd); err != nil {
		if lifeline != nil {
			lifeline.Close()
		}
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	// Bound to the runner (lifeline.go) before anything else can happen; a child that could
	// not be bound is killed, not left to outlive the runner.
	if err := errors.Join(afterStart(cmd), keeperAdd(cmd.Process.Pid)); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if lifeline != nil {
			lifeline.Close()
		}
		keeperForget(cmd.Process.Pid)
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	p := &Process{
		lifeline:   lifeline,
		spec:       spec,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		started:    started,
		stdoutPath: stdoutPath,
		stderrPath: stderrPath,
		done:       make(chan struct{}),
	}
	go p.reap()
	return p, nil
}

// checkSpec refuses a spec that names no process, program, working or log folder, or whose
// environment holds an entry that is not KEY=value or one of godog's own settings.
func checkSpec(spec Spec) error {
	if spec.Name == "" {
		return errors.New("start process: Spec.Name is empty")
	}
	if spec.Path == "" {
		return fmt.Errorf("start %s: Spec.Path is empty", spec.Name)
	}
	if spec.Dir == "" {
		return fmt.Errorf("start %s: Spec.Dir is empty (a child must not run in the runner's directory by accident)", spec.Name)
	}
	if spec.LogDir == "" {
		return fmt.Errorf("start %s: Spec.LogDir is empty", spec.Name)
	}
	for i, kv := range spec.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			// The entry itself is not printed: it may be a token.
			return fmt.Errorf("start %s: environment entry %d is not KEY=value", spec.Name, i)
		}
		if strings.HasPrefix(strings.ToUpper(k), "GODOG_") {
			return fmt.Errorf("start %s: environment variable %s must not reach a child (godog's own settings)", spec.Name, k)
		}
	}
	return nil
}

// startRetryingBusy retries ETXTBSY ("text file busy"), which Linux reports when a
// binary written a moment ago is still open for writing in another forked child
// (go.dev/issue/22315).
func startRetryingBusy(cmd *exec.Cmd) error {
	var err error
	for i := 0; i < 5; i++ {
		err = startChild(cmd)
		if err == nil || !isTextBusy(err) {
			return err
		}
		time.Sleep(time.Duration(10*(i+1)) * time.Millisecond)
		// exec.Cmd cannot be started twice; rebuild it.
		fresh := exec.Command(cmd.Path, cmd.Args[1:]...)
		fresh.Env, fresh.Dir, fresh.Stdin, fresh.Stdout, fresh.Stderr, fresh.SysProcAttr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
		*cmd = *fresh
	}
	return err
}

func createUnique(dir, base, suffix string) (string, *os.File, error) {
	for i := 1; i < 1000; i++ {
		name := base + suffix
		if i > 1 {
			name = fmt.Sprintf("%s-%d%s", base, i, suffix)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			return path, f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", nil, fmt.Errorf("create %s: %w", path, err)
		}
	}
	return "", nil, fmt.Errorf("create log file for %s in %s: too many with that name", base, dir)
}

// reap is the only caller of cmd.Wait, so the process is reaped exactly once and a
// killed child never lingers as a zombie.
func (p *Process) reap() {
	err := p.cmd.Wait()
	res := Result{Duration: time.Since(p.started), ExitCode: -1}
	if st := p.cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
		res.Signal = exitSignal(st)
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			res.Err = err
		}
	} else if err != nil {
		res.Err = err
	}
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	keeperForget(p.pid) // when its group is empty; else after KillTree swept it
	p.mu.Lock()
	p.stdoutTail = readTail(p.stdoutPath, TailBytes)
	p.stderrTail = readTail(p.stderrPath, TailBytes)
	p.mu.Unlock()
	p.result = res
	close(p.done)
}

// Name is Spec.Name.
func (p *Process) Name() string { return p.spec.Name }

// Pid is the child's process id.
func (p *Process) Pid() int { return p.pid }

// Argv is the command line the child was started with (argv[0] = Spec.Path).
func (p *Process) Argv() []string { return append([]string{p.spec.Path}, p.spec.Args...) }

// Started is when the child was started.
func (p *Process) Started() time.Time { return p.started }

// StdoutPath and StderrPath are the capture files.
func (p *Process) StdoutPath() string { return p.stdoutPath }
func (p *Process) StderrPath() string { return p.stderrPath }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (Result, bool) {
	select {
	case <-p.done:
		return p.result, true
	default:
		return Result{}, false
	}
}

// Wait waits for the process to exit or ctx to end. A ctx that ends first returns an
// error naming the process (the process keeps running).
func (p *Process) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.done:
		return p.result, nil
	case <-ctx.Done():
		return Result{}, fmt.Errorf("waiting for %s (pid %d) to exit after %s: %w; stderr tail: %s",
			p.spec.Name, p.pid, time.Since(p.started).Round(time.Millisecond), context.Cause(ctx), lastLines(p.StderrTail(), 3))
	}
}

// WaitTimeout is Wait with its own limit.
func (p *Process) WaitTimeout(timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Wait(ctx)
}

// Signal sends a graceful stop request to the process itself (not its children: how
// the child winds its own children down is what scenarios observe).
// Unix: Interrupt = SIGINT, Terminate = SIGTERM. Windows: both send CTRL_BREAK to the
// child's console process group (the SIGBREAK that Node reports); os.Process.Signal
// cannot interrupt on Windows.
func (p *Process) Signal(s StopSignal) error {
	if _, ok := p.Exited(); ok {
		return fmt.Errorf("signal %s to %s (pid %d): process already exited", s, p.spec.Name, p.pid)
	}
	if err := sendStop(p.cmd.Process, s); err != nil {
		return fmt.Errorf("signal %s to %s (pid %d): %w", s, p.spec.Name, p.pid, err)
	}
	return nil
}

// Stop asks the process to stop (Interrupt), waits up to grace for it to exit, then
// kills its whole tree. A process that exits within grace is not killed, and neither
// are children it chose to leave running (the registry's KillAll sweeps those). It
// returns how the process ended; the error is non-nil only if the process could not
// be ended at all.
func (p *Process) Stop(grace time.Duration) (Result, error) {
	if res, ok := p.Exited(); ok {
		return res, nil
	}
	sigErr := p.Signal(Interrupt)
	if sigErr == nil {
		if res, err := p.WaitTimeout(grace); err == nil {
			return res, nil
		}
	}
	if _, err := p.KillTree(); err != nil {
		return Result{}, fmt.Errorf("stop %s: %w", p.spec.Name, err)
	}
	res, err := p.WaitTimeout(10 * time.Second)
	if err != nil {
		return Result{}, fmt.Errorf("stop %s: killed but not reaped: %w", p.spec.Name, err)
	}
	return res, nil
}

// Kill kills the process only (SIGKILL / TerminateProcess), leaving its children
// orphaned: the "kill the FlowNet parent" case. It goes through the os.Process handle,
// which on Linux is a pidfd and therefore safe against pid reuse.
func (p *Process) Kill() error {
	if _, ok := p.Exited(); ok {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.spec.Name, p.pid, err)
	}
	p.noteKilled(int32(p.pid))
	return nil
}

// KillTree kills the process and every descendant, deepest first (on Unix after stopping
// them all, so no member reacts to another's death; see freeze), and on Unix the
// rest of its process group (orphans whose parent died earlier are no longer below
// the pid but stay in the group). It returns the pids it killed, once they are gone.
// Calling it after the process exited still sweeps the group.
func (p *Process) KillTree() ([]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	var killed []int32
	if _, exited := p.Exited(); !exited {
		snap, err := takeSnapshot(ctx, false)
		if err != nil {
			errs = append(errs, err)
		} else {
			freeze(ctx, snap, append([]member{{int32(p.pid), 0}}, snap.descendants(int32(p.pid))...))
			k, err := killDeepestFirst(ctx, snap, snap.descendants(int32(p.pid)))
			killed = append(killed, k...)
			if err != nil {
				errs = append(errs, err)
			}
			if err := awaitGone(ctx, snap, k); err != nil {
				errs = append(errs, err)
			}
		}
		if _, exited := p.Exited(); !exited {
			if err := p.Kill(); err != nil {
				errs = append(errs, err)
			} else {
				killed = append(killed, int32(p.pid))
			}
		}
		if _, err := p.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// The leader is reaped by now (or was before): it cannot be alive in its group.
	k, err := killGroup(ctx, p.pid, false)
	killed = append(killed, k...)
	if err != nil {
		errs = append(errs, err)
	}
	keeperForget(p.pid)
	killed = uniq(killed)
	p.noteKilled(killed...)
	if len(errs) > 0 {
		return killed, fmt.Errorf("kill tree of %s (pid %d): %w", p.spec.Name, p.pid, errors.Join(errs...))
	}
	return killed, nil
}

func (p *Process) noteKilled(pids ...int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = uniq(append(p.killed, pids...))
}

// KilledPids lists every pid the harness killed on behalf of this process.
func (p *Process) KilledPids() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int32(nil), p.killed...)
}

// StdoutTail returns the last TailBytes of stdout (live while running).
func (p *Process) StdoutTail() string { return p.tail(p.stdoutPath, true) }

// StderrTail returns the last TailBytes of stderr (live while running).
func (p *Process) StderrTail() string { return p.tail(p.stderrPath, false) }

func (p *Process) tail(path string, stdout bool) string {
	if t := readTail(path, TailBytes); t != "" {
		return t
	}
	// The file may have been removed with the work dir; fall back to the exit snapshot.
	p.mu.Lock()
	defer p.mu.Unlock()
	if stdout {
		return p.stdoutTail
	}
	return p.stderrTail
}

// Stdout returns everything the process (and any descendant sharing the handle) has
// written to stdout so far.
func (p *Process) Stdout() (string, error) { return readAll(p.stdoutPath) }

// Stderr returns everything written to stderr so far.
func (p *Process) Stderr() (string, error) { return readAll(p.stderrPath) }

func readAll(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read capture: %w", err)
	}
	return string(b), nil
}

func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	nr, _ := f.ReadAt(buf, off)
	buf = buf[:nr]
	if off > 0 {
		// Do not start in the middle of a UTF-8 sequence (Japanese messages are common).
		for i := 0; i < 4 && i < len(buf) && buf[i]&0xC0 == 0x80; i++ {
			buf = buf[1:]
		}
	}
	return string(buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if out == "" {
		return "(empty)"
	}
	return out
}

// LastJSONLine returns the last line of text that is a JSON object for which match
// returns true (match nil accepts any object). The contracts print machine results as
// one JSON line after human-readable lines, e.g. kSQL-Flow's
// {"kind":"LOCK_INSPECTION_RESULT",…}.
func LastJSONLine(text string, match func(obj map[string]any) bool) (map[string]any, bool) {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace([]byte(lines[i]))
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			continue
		}
		if match == nil || match(obj) {
			return obj, true
		}
	}
	return nil, false
}

// Env helpers.

// EnvFromOS returns "NAME=value" for each named variable that is set in the runner's
// environment. Use it to pass through a deliberate, visible list (PATH, SYSTEMROOT, …).
func EnvFromOS(names ...string) []string {
	var out []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			out = append(out, n+"="+v)
		}
	}
	return out
}

// PlatformEnv returns the few variables a child needs to run at all on this platform
// (see platformEnvNames), taken from the runner's environment.
func PlatformEnv() []string { return EnvFromOS(platformEnvNames...) }

func uniq(pids []int32) []int32 {
	seen := make(map[int32]bool, len(pids))
	out := pids[:0:0]
	for _, p := range pids {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// RunBound runs a short command the caller prepared (pipes, context, WaitDelay) like
// cmd.Run, but bound to the runner as every Start child is (lifeline.go): its own process
// group, killed with the runner. It replaces cmd.SysProcAttr.
func RunBound(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	if err := startChild(cmd); err != nil {
		return err
	}
	if err := errors.Join(afterStart(cmd), keeperAdd(cmd.Process.Pid)); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		keeperForget(cmd.Process.Pid)
		return err
	}
	err := cmd.Wait()
	keeperForget(cmd.Process.Pid)
	return err
}
