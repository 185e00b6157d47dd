package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/shirou/gopsutil/v3/process"
)

// The process table is read once per operation (a snapshot: pid, parent, start time,
// optionally argv) and trees are built from parent links. This avoids gopsutil v3's
// Children(), which on Unix forks `pgrep -P` per call and returns an *exec.ExitError
// (not an empty list) when a process has no children.

// Every snapshot reads each process's start time, which gopsutil computes from the boot time;
// unless cached it re-reads /proc/stat for every process of every snapshot (a tenth of the
// runner's CPU in a full run, measured). The boot time does not change while we run.
func init() { process.EnableBootTimeCache(true) }

type procInfo struct {
	PID        int32
	PPID       int32
	CreateTime int64 // ms since epoch; guards against pid reuse between snapshot and kill
	Argv       []string
}

type snapshot struct {
	procs    map[int32]*procInfo
	children map[int32][]int32
}

func takeSnapshot(ctx context.Context, withArgv bool) (*snapshot, error) {
	parents, err := parentMap(ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	s := &snapshot{procs: make(map[int32]*procInfo, len(parents)), children: make(map[int32][]int32)}
	for pid, ppid := range parents {
		p := &process.Process{Pid: pid}
		info := &procInfo{PID: pid, PPID: ppid}
		info.CreateTime, _ = p.CreateTimeWithContext(ctx)
		if withArgv {
			info.Argv, _ = p.CmdlineSliceWithContext(ctx)
		}
		s.procs[pid] = info
	}
	for pid, info := range s.procs {
		if info.PPID == pid { // pid 0 on some systems is its own parent
			continue
		}
		// Windows keeps a dead parent's pid in the child's entry; if that pid was reused,
		// the "parent" is younger than the child. Such links are not real.
		if parent := s.procs[info.PPID]; parent != nil && parent.CreateTime != 0 && info.CreateTime != 0 && info.CreateTime < parent.CreateTime {
			continue
		}
		s.children[info.PPID] = append(s.children[info.PPID], pid)
	}
	return s, nil
}

type member struct {
	pid   int32
	depth int
}

// descendants lists every process below root (not root itself), breadth first, with depth.
func (s *snapshot) descendants(root int32) []member {
	var out []member
	seen := map[int32]bool{root: true}
	queue := []member{{root, 0}}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range s.children[cur.pid] {
			if seen[c] {
				continue
			}
			seen[c] = true
			m := member{c, cur.depth + 1}
			out = append(out, m)
			queue = append(queue, m)
		}
	}
	return out
}

// freeze stops every member (Unix: SIGSTOP, shallowest first, so no parent can start
// another child meanwhile) before a deepest-first kill: otherwise a parent that outlives its
// child by a few milliseconds reacts to that death — a FlowNet records its kSQL-Flow child's
// attempt as ended and starts the next node — and the kill leaves traces no crash would. A
// stopped process still dies of SIGKILL. Windows has no way to stop a process from outside
// short of a debugger: there the kill stays deepest first, unfrozen.
func freeze(ctx context.Context, s *snapshot, members []member) {
	ms := slices.Clone(members)
	slices.SortStableFunc(ms, func(a, b member) int { return a.depth - b.depth })
	for _, m := range ms {
		if sameProcess(ctx, m.pid, s.procs[m.pid]) {
			_ = stopPid(m.pid) // best effort: a member that cannot be stopped is still killed
		}
	}
}

// killDeepestFirst kills members in order of decreasing depth, so that no parent dies
// before its child and leaves it to be reparented out of our sight.
func killDeepestFirst(ctx context.Context, s *snapshot, members []member) ([]int32, error) {
	ms := slices.Clone(members)
	slices.SortStableFunc(ms, func(a, b member) int {
		if a.depth != b.depth {
			return b.depth - a.depth
		}
		return int(b.pid - a.pid)
	})
	var killed []int32
	var errs []error
	for _, m := range ms {
		info := s.procs[m.pid]
		if !sameProcess(ctx, m.pid, info) {
			continue // already gone, or the pid now belongs to someone else
		}
		if err := killPid(m.pid); err != nil {
			if errors.Is(err, errGone) {
				continue
			}
			errs = append(errs, fmt.Errorf("kill pid %d: %w", m.pid, err))
			continue
		}
		killed = append(killed, m.pid)
	}
	return killed, errors.Join(errs...)
}

var errGone = errors.New("process already gone")

// sameProcess reports whether pid is still the live, non-zombie process recorded in info.
func sameProcess(ctx context.Context, pid int32, info *procInfo) bool {
	p, err := process.NewProcessWithContext(ctx, pid)
	if err != nil {
		return false
	}
	if info != nil && info.CreateTime != 0 {
		ct, err := p.CreateTimeWithContext(ctx)
		if err != nil || ct != info.CreateTime {
			return false
		}
	}
	return !isZombie(ctx, p)
}

func isZombie(ctx context.Context, p *process.Process) bool {
	st, err := p.StatusWithContext(ctx)
	if err != nil {
		return false
	}
	return slices.Contains(st, process.Zombie)
}

// awaitGone waits (bounded) until every pid in pids has died, so callers that kill
// and then inspect state see the kill as done.
func awaitGone(ctx context.Context, s *snapshot, pids []int32) error {
	return wait.Until(wait.WithConfig(ctx, wait.Config{Progress: discard{}}), fmt.Sprintf("killed processes %v to exit", pids),
		5*time.Second, 5*time.Millisecond, func(ctx context.Context) (bool, string, error) {
			var alive []int32
			for _, pid := range pids {
				if sameProcess(ctx, pid, s.procs[pid]) {
					alive = append(alive, pid)
				}
			}
			return len(alive) == 0, fmt.Sprintf("still alive: %v", alive), nil
		})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// ArgvMatch decides whether a command line is the one looked for.
type ArgvMatch func(argv []string) bool

// ArgvHasSeq matches a command line containing seq as consecutive arguments, e.g.
// ArgvHasSeq("--attempt-id", id).
func ArgvHasSeq(seq ...string) ArgvMatch {
	return func(argv []string) bool {
		if len(seq) == 0 {
			return true
		}
		for i := 0; i+len(seq) <= len(argv); i++ {
			if slices.Equal(argv[i:i+len(seq)], seq) {
				return true
			}
		}
		return false
	}
}

// ArgvContains matches a command line in which some argument contains sub (e.g. the
// scope id inside a path).
func ArgvContains(sub string) ArgvMatch {
	return func(argv []string) bool {
		for _, a := range argv {
			if strings.Contains(a, sub) {
				return true
			}
		}
		return false
	}
}

// AllOf matches when every matcher matches.
func AllOf(ms ...ArgvMatch) ArgvMatch {
	return func(argv []string) bool {
		for _, m := range ms {
			if !m(argv) {
				return false
			}
		}
		return true
	}
}

// FindByArgv returns the pids (ascending) of every live process, other than the
// runner itself, whose command line matches. On Windows the command line is one
// string that gopsutil splits at spaces (quotes are not honoured), so match on
// tokens without spaces (flags, ids, the scope), not on whole quoted paths.
func FindByArgv(ctx context.Context, match ArgvMatch) ([]int32, error) {
	s, err := takeSnapshot(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("find processes by command line: %w", err)
	}
	return s.matches(match), nil
}

func (s *snapshot) matches(match ArgvMatch) []int32 {
	self := int32(os.Getpid())
	var out []int32
	for pid, info := range s.procs {
		if pid == self || len(info.Argv) == 0 {
			continue
		}
		if match(info.Argv) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// Tree is the single tree of matching processes FindOneTree found.
type Tree struct {
	Root    int32   // the topmost matching process
	Matched []int32 // every matching pid (all inside the tree)
	Members []int32 // Root and all its descendants, matching or not
	Argv    []string
}

// FindOneTree requires that the processes whose command line matches form exactly one
// tree: one topmost match, every other match below it (a launcher such as cmd.exe or
// a node wrapper often matches together with the real worker). what names the target
// for error messages.
func FindOneTree(ctx context.Context, what string, match ArgvMatch) (Tree, *snapshot, error) {
	s, err := takeSnapshot(ctx, true)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("find %s: %w", what, err)
	}
	matched := s.matches(match)
	if len(matched) == 0 {
		return Tree{}, s, fmt.Errorf("find %s: no running process matches", what)
	}
	in := make(map[int32]bool, len(matched))
	for _, pid := range matched {
		in[pid] = true
	}
	var roots []int32
	for _, pid := range matched {
		if !s.hasAncestorIn(pid, in) {
			roots = append(roots, pid)
		}
	}
	if len(roots) != 1 {
		var desc []string
		for _, r := range roots {
			desc = append(desc, fmt.Sprintf("pid %d %q", r, shortArgv(s.procs[r].Argv)))
		}
		return Tree{}, s, fmt.Errorf("find %s: expected exactly one matching process tree, found %d: %s",
			what, len(roots), strings.Join(desc, "; "))
	}
	t := Tree{Root: roots[0], Matched: matched, Members: []int32{roots[0]}, Argv: s.procs[roots[0]].Argv}
	for _, m := range s.descendants(roots[0]) {
		t.Members = append(t.Members, m.pid)
	}
	return t, s, nil
}

func (s *snapshot) hasAncestorIn(pid int32, set map[int32]bool) bool {
	seen := map[int32]bool{pid: true}
	cur := s.procs[pid]
	for cur != nil {
		pp := cur.PPID
		if seen[pp] {
			return false
		}
		seen[pp] = true
		if set[pp] {
			return true
		}
		cur = s.procs[pp]
	}
	return false
}

func shortArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// KillOneTree finds the single matching tree (FindOneTree) and kills it, root and all
// descendants, deepest first; it returns once they are gone. This is how a scenario
// kills the kSQL-Flow child of one attempt, e.g.
//
//	proc.KillOneTree(ctx, "kSQL-Flow attempt "+id, proc.AllOf(proc.ArgvHasSeq("--attempt-id", id), proc.ArgvContains(scope)))
func KillOneTree(ctx context.Context, what string, match ArgvMatch) (Tree, []int32, error) {
	t, s, err := FindOneTree(ctx, what, match)
	if err != nil {
		return t, nil, err
	}
	members := []member{{t.Root, 0}}
	members = append(members, s.descendants(t.Root)...)
	freeze(ctx, s, members)
	killed, err := killDeepestFirst(ctx, s, members)
	if err != nil {
		return t, killed, fmt.Errorf("kill %s (tree of pid %d): %w", what, t.Root, err)
	}
	if err := awaitGone(ctx, s, killed); err != nil {
		return t, killed, fmt.Errorf("kill %s: %w", what, err)
	}
	return t, killed, nil
}

// PidAlive reports whether pid is a live (non-zombie) process.
func PidAlive(ctx context.Context, pid int32) bool { return sameProcess(ctx, pid, nil) }
