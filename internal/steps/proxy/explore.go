package proxy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

// An explored run (`flowtest explore`): the scenario runs as written, but the kintone writes
// of the named parties go through the scheduler, which decides their order. Each such FlowNet
// process gets a fault proxy whether or not the feature declares one, and the proxy's gate is
// the scheduler's; a requester's background cancel (requests/requester.go) has a proxy of its own,
// gated alike. Every other process passes as in `run`.

type exploreState struct {
	sched     *schedule.Scheduler
	processes []string
	lifted    map[string]string // barrier name → the explored process it would have held
}

var exploreKey = scenario.NewKey[exploreState]("explore")

// Explore makes st's run an explored one: the writes of processes go through s. Call it
// before the scenario's steps run (in BeforeScenario).
func Explore(st *scenario.State, s *schedule.Scheduler, processes []string) {
	*exploreKey.Of(st) = exploreState{sched: s, processes: slices.Clone(processes)}
}

// ExploredGate is the scheduler's gate for process name, nil when its writes are not scheduled.
func ExploredGate(st *scenario.State, name string) faultproxy.Gate {
	es := exploreKey.Of(st)
	if es.sched == nil || !slices.Contains(es.processes, name) {
		return nil
	}
	return es.sched.Gate(name)
}

// WatchExploredExit tells the scheduler when explored party name has ended (done closed: a
// process exited, the requester's background cancel was answered), so that it counts as
// quiet at once instead of after the quiescence window (it will send nothing more). Every
// party ends: the scenario's cleanup stops what is still running. busy is the party's busy
// probe (proc.Process.BusyProbe: its process tree is running), nil for a party with no
// process of its own or where the system cannot tell: the scheduler counts a party quiet
// only when its probe, if any, found it asleep, so that a process starved of a CPU or
// starting a child is not taken for idle because it was silent for a while.
func WatchExploredExit(st *scenario.State, name string, done <-chan struct{}, busy func() bool) {
	es := exploreKey.Of(st)
	if es.sched == nil || !slices.Contains(es.processes, name) {
		return
	}
	sched := es.sched
	sched.Probe(name, busy)
	go func() {
		<-done
		sched.Exited(name)
	}()
}

// explored: name is a process whose writes the scheduler orders.
func explored(st *scenario.State, name string) bool {
	es := exploreKey.Of(st)
	return es.sched != nil && slices.Contains(es.processes, name)
}

// Barriers in the fault proxy of an explored process are lifted: such a barrier forces one
// order of the process's writes, which is what the scheduler decides instead (and a write
// held at a barrier is one the scheduler released and waits on, so nothing else would be
// released while the scenario waits for the barrier). A lifted barrier installs nothing;
// its "is reached" and "is released" steps pass at once, every other step about it fails
// (what it held is not there to judge). A scenario whose assertions hold only in the order
// its barriers force is therefore not explorable: it fails under another order.
func liftBarrier(st *scenario.State, name, process string) bool {
	if !explored(st, process) {
		return false
	}
	es := exploreKey.Of(st)
	if es.lifted == nil {
		es.lifted = map[string]string{}
	}
	es.lifted[name] = process
	st.Note("explore: barrier "+name+" lifted", "the scheduler orders the writes of "+process+"; the barrier holds nothing")
	return true
}

func lifted(st *scenario.State, name string) bool {
	_, ok := exploreKey.Of(st).lifted[name]
	return ok
}

func liftedError(st *scenario.State, name string) error {
	if p, ok := exploreKey.Of(st).lifted[name]; ok {
		return fmt.Errorf("barrier %q was lifted: flowtest explore orders the writes of %q itself, so nothing was held there", name, p)
	}
	return nil
}

// exploredJobsGate is the scheduler's gate for the scope's kSQL-Flow proxy in an explored
// run (ksqlproxy.go: in place before any FlowNet command that can start kSQL-Flow, so before
// the explored processes). The children of every FlowNet process read through that one
// proxy, so their reads cannot be told apart by process, but while one is in flight some
// process is busy and nothing is released: without them a process whose node runs sends
// nothing itself, and the scheduler would take it for idle and release another process's
// write in the middle of the node. The gate holds none of them (they write no state, audit
// or request record). Nil outside explore.
func exploredJobsGate(st *scenario.State) faultproxy.Gate {
	es := exploreKey.Of(st)
	if es.sched == nil {
		return nil
	}
	return es.sched.Gate(windowProxyName)
}

// BranchOf names an outcome by state/result code only, without the request names (the
// order the two requests were settled in is not part of the branch).
func BranchOf(got []string) []string {
	out := make([]string, len(got))
	for i, g := range got {
		if _, after, ok := strings.Cut(g, ": "); ok {
			g = after
		}
		out[i] = g
	}
	sort.Strings(out)
	return out
}
