package proc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Registry holds every process a scenario started, so the After hook can kill all that
// is still alive and the scenario record can list them.
type Registry struct {
	mu    sync.Mutex
	procs []*Process
}

// NewRegistry returns an empty registry (one per scenario).
func NewRegistry() *Registry { return &Registry{} }

type registryKey struct{}

// WithRegistry returns a context whose Start calls register in r.
func WithRegistry(ctx context.Context, r *Registry) context.Context {
	return context.WithValue(ctx, registryKey{}, r)
}

// RegistryFrom returns the registry in ctx, or nil.
func RegistryFrom(ctx context.Context) *Registry {
	r, _ := ctx.Value(registryKey{}).(*Registry)
	return r
}

// Start starts a process and registers it in r.
func (r *Registry) Start(ctx context.Context, spec Spec) (*Process, error) {
	p, err := start(spec)
	if err != nil {
		return nil, err
	}
	r.add(p)
	return p, nil
}

func (r *Registry) add(p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs = append(r.procs, p)
}

// Processes lists the registered processes in start order.
func (r *Registry) Processes() []*Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.procs)
}

// Killed reports what KillAll killed for one registered process.
type Killed struct {
	Name string
	Pid  int
	Pids []int32 // every pid killed: the process, its descendants, its group's orphans
	Err  error
}

// KillAll kills, for every registered process, whatever of its tree is still alive
// (the process, its descendants, and on Unix its process group's orphans). It returns
// one entry per process for which something was killed or a kill failed, and a joined
// error if any kill failed (a failed cleanup fails the scenario).
func (r *Registry) KillAll() ([]Killed, error) {
	var out []Killed
	var errs []error
	procs := r.Processes()
	// Newest first: later processes are usually children of the scenario's later steps
	// and nothing waits on them.
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		pids, err := p.KillTree()
		if len(pids) == 0 && err == nil {
			continue
		}
		out = append(out, Killed{Name: p.Name(), Pid: p.Pid(), Pids: pids, Err: err})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Survivor is a live process that belongs to a registered process's tree.
type Survivor struct {
	Of   string // Name of the registered process
	Pid  int32
	Argv []string
}

func (s Survivor) String() string {
	return fmt.Sprintf("pid %d (from %s): %s", s.Pid, s.Of, shortArgv(s.Argv))
}

// Survivors lists the live processes of every registered tree: registered processes
// that have not exited, their descendants, and (Unix) members of their process groups.
func (r *Registry) Survivors(ctx context.Context) ([]Survivor, error) {
	snap, err := takeSnapshot(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("look for surviving processes: %w", err)
	}
	seen := map[int32]bool{}
	var out []Survivor
	addPid := func(of string, pid int32) {
		if seen[pid] || !sameProcess(ctx, pid, snap.procs[pid]) {
			return
		}
		seen[pid] = true
		var argv []string
		if info := snap.procs[pid]; info != nil {
			argv = info.Argv
		}
		out = append(out, Survivor{Of: of, Pid: pid, Argv: argv})
	}
	for _, p := range r.Processes() {
		_, exited := p.Exited()
		if !exited {
			addPid(p.Name(), int32(p.Pid()))
			for _, m := range snap.descendants(int32(p.Pid())) {
				addPid(p.Name(), m.pid)
			}
		}
		for _, pid := range groupSurvivors(ctx, snap, p.Pid(), !exited) {
			addPid(p.Name(), pid)
		}
	}
	return out, nil
}

// TB is the part of testing.TB that CheckLeaks needs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// CheckLeaks returns a registry for a test and fails the test if any process started
// through it (or a descendant, or on Unix a member of its group) is still alive when
// the test's other cleanups have run. Survivors are then killed so one leaky test does
// not poison the next. Register it before other cleanups (Cleanup runs last-in first-out).
func CheckLeaks(t TB) *Registry {
	t.Helper()
	r := NewRegistry()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var last []Survivor
		// A process killed a moment ago may need a few milliseconds to be gone; allow
		// that, but no more.
		err := wait.Until(wait.WithConfig(ctx, wait.Config{Progress: discard{}}), "test processes to be gone", 2*time.Second, 10*time.Millisecond,
			func(ctx context.Context) (bool, string, error) {
				s, err := r.Survivors(ctx)
				if err != nil {
					return false, "", err
				}
				last = s
				return len(s) == 0, fmt.Sprintf("%d alive", len(s)), nil
			})
		if err == nil {
			return
		}
		var lines []string
		for _, s := range last {
			lines = append(lines, s.String())
		}
		t.Errorf("processes outlived the test:\n  %s\n(%v)", strings.Join(lines, "\n  "), err)
		if _, kerr := r.KillAll(); kerr != nil {
			t.Errorf("killing leaked processes: %v", kerr)
		}
	})
	return r
}

// Record is the process as the scenario record shows it, taken at one instant: a process
// that has not exited is "still running when recorded". The tails are raw; the archive
// redacts them before they leave the run.
func (p *Process) Record() record.Process {
	r := record.Process{Name: p.Name(), Argv: p.Argv(), StdoutTail: p.StdoutTail(), StderrTail: p.StderrTail()}
	if !p.started.IsZero() {
		r.Start = p.started.UTC()
	}
	res, ok := p.Exited()
	if !ok {
		r.Signal = "still running when recorded"
		return r
	}
	r.Signal, r.DurationMS = res.Signal, res.Duration.Milliseconds()
	if res.Signal == "" {
		code := res.ExitCode
		r.ExitCode = &code
	}
	return r
}
