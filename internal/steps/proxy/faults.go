package proxy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// faultDomain: a fault proxy between one named FlowNet process (and the children that
// inherit its base URL, e.g. a poller's runs) and kintone. Feature text declares the proxy
// before the process starts, switches its mode and waits on an outage (dropped requests,
// its end before the lease deadline, the kSQL-Flow child that finishes through it). Its
// barriers are barriers.go's, its traffic-log assertions faulttraffic.go's, its selective
// faults selectivefaults.go's. kSQL-Flow never passes these proxies (at most the scope's own
// kSQL-Flow proxy, windows.go, which holds a read but never blocks): only FlowNet's traffic does.
type faultDomain struct{}

func (d faultDomain) register(reg stepdef.Registry) {
	reg.Step(`^the kintone traffic of "([^"]+)" goes through a fault proxy$`, d.trafficGoesThroughAProxy)
	reg.Step(`^the fault proxy of "([^"]+)" (passes everything|blocks everything|blocks writes)$`, d.switchMode)
	reg.Step(`^the fault proxy of "([^"]+)" has dropped at least (\d+) requests?$`, d.droppedAtLeast)
	reg.Step(`^the fault proxy of "([^"]+)" passes everything again when at most (\d+) s of the (\d+) s lease it last carried are left$`, d.passBeforeLeaseDeadline)
}

// faultState: the processes declared to go through a fault proxy, and their proxies by
// process name.
type faultState struct {
	planned map[string]bool
	proxies map[string]*faultproxy.Proxy
	// pendingMode is a mode set for a planned process before it started: set in its proxy
	// when the proxy starts, before the process sends anything.
	pendingMode map[string]faultproxy.Mode
}

var faultKey = scenario.NewKey[faultState]("faults")

var modesByText = map[string]faultproxy.Mode{
	"passes everything": faultproxy.ModePass,
	"blocks everything": faultproxy.ModeBlock,
	"blocks writes":     faultproxy.ModeBlockWrites,
}

func (faultDomain) trafficGoesThroughAProxy(ctx context.Context, name string) error {
	fs := faultKey.Of(scenario.From(ctx))
	if kit.ProcessesOf(ctx).Started(name) {
		return fmt.Errorf("%q has already started: declare its fault proxy before it starts", name)
	}
	if fs.planned == nil {
		fs.planned = map[string]bool{}
	}
	fs.planned[name] = true
	return nil
}

// proxyEnvFor starts the proxy planned for the FlowNet process name, if any, and returns the
// environment that points the process at it: base URL and a CA bundle holding the target's CA
// and the proxy's. It is called by startFlowNet.
func proxyEnvFor(ctx context.Context, name string) ([]string, error) {
	sc := kit.SceneOf(ctx)
	fs := faultKey.Of(sc.St)
	if !fs.planned[name] && !explored(sc.St, name) { // an explored process always has one (explore.go)
		return countingProxyEnv(sc, name) // counted all the same (apiproxy.go)
	}
	dir := filepath.Join(sc.St.WorkDir, "proxy-"+kit.ProcFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The original hook's control file (scenarios.md §5: pass | block | block-writes, or the
	// JSON {mode, barriers}) steers this proxy too, for an operator during a live run: it is
	// fault-control.txt in the proxy's directory (kept with --keep-workdirs), re-read on every
	// request; as long as nobody creates it, the steps' modes and barriers rule alone.
	control := filepath.Join(dir, "fault-control.txt")
	opts, bundle, err := ScenarioProxyOptions(sc, kit.ProcFileName(name), dir, apicount.FlowNet)
	if err != nil {
		return nil, err
	}
	opts.ControlFile = control
	p, err := faultproxy.New(opts)
	if err != nil {
		return nil, fmt.Errorf("fault proxy for %q: %w", name, err)
	}
	if fs.proxies == nil {
		fs.proxies = map[string]*faultproxy.Proxy{}
	}
	fs.proxies[name] = p
	JudgeWritesOf(sc.St, name, p)
	if g := ExploredGate(sc.St, name); g != nil {
		p.SetGate(g)
	}
	if err := BarrierKey.Of(sc.St).installPending(name, p); err != nil {
		return nil, err
	}
	if err := installPendingFaults(sc.St, name, p); err != nil {
		return nil, err
	}
	if m, ok := fs.pendingMode[name]; ok {
		if err := p.SetMode(m); err != nil {
			return nil, fmt.Errorf("fault proxy of %q: %w", name, err)
		}
		delete(fs.pendingMode, name)
	}
	st := sc.St
	st.Defer("close the fault proxy of "+name, func(context.Context) error {
		err := CloseAndRecord(st, name, p)
		recordFaultFirings(st, sc, name, p)
		return err
	})
	env := flownetProxyEnv(p, bundle)
	fmt.Fprintf(st.Log, "  fault proxy for %q at %s (control file %s)\n", name, p.URL(), control)
	return env, nil
}

// CloseAndRecord closes a proxy of the scenario and puts what it saw into the record under
// name: its counts, every request, each barrier arrival and, for a barrier the scenario
// released, the end of its hold (the record shows At..ReleasedAt).
func CloseAndRecord(st *scenario.State, name string, p *faultproxy.Proxy) error {
	err := p.Close()
	st.AddTraffic(trafficCounts(name, p.Counts()))
	st.AddTrafficLog(trafficLines(name, p.Traffic()))
	byID := BarrierKey.Of(st).byID()
	arrived := map[string]bool{}
	for _, a := range p.Arrivals() {
		arrived[a.BarrierID] = true
		rec := a.Record(name)
		if b := byID[a.BarrierID]; b != nil {
			rec.Name = b.name
			if b.process != "" {
				rec.Process = b.process
			}
		}
		st.AddBarrierArrival(rec)
	}
	for _, b := range byID {
		if arrived[b.ID] && !b.releasedAt.IsZero() {
			st.ReleaseBarrier(b.ID, b.releasedAt)
		}
	}
	return err
}

// trafficLines are a proxy's logged requests for the scenario record, under the process name.
func trafficLines(name string, lines []faultproxy.TrafficLine) []results.TrafficLine {
	out := make([]results.TrafficLine, len(lines))
	for i, l := range lines {
		out[i] = l.Record(name)
	}
	return out
}

// trafficCounts names a proxy's counters for the scenario record.
func trafficCounts(name string, c faultproxy.Counts) map[string]int {
	prefix := kit.ProcFileName(name) + "."
	out := map[string]int{prefix + "total": c.Total, prefix + "blocked": c.Blocked, prefix + "file": c.File,
		prefix + "other": c.Other, prefix + "heartbeat": c.Heartbeat, prefix + "barrier_timeouts": c.BarrierTimeouts,
		prefix + "upstream_errors": c.UpstreamErrors}
	methods := slices.Sorted(maps.Keys(c.Records))
	for _, m := range methods {
		out[prefix+"records."+m] = c.Records[m]
	}
	return out
}

// EndedProxy returns the proxy of a process that has exited: its counts and traffic are final.
func EndedProxy(ctx context.Context, name, why string) (*faultproxy.Proxy, error) {
	p, err := proxyOf(ctx, name)
	if err != nil {
		return nil, err
	}
	proc, err := kit.ProcessesOf(ctx).Resolve(`"` + name + `"`)
	if err != nil {
		return nil, err
	}
	if _, done := proc.Proc.Exited(); !done {
		return nil, fmt.Errorf("%q is still running: %s", name, why)
	}
	return p, nil
}

// isPlanned: the process was declared to go through a fault proxy (it may not have started).
func (fs *faultState) isPlanned(name string) bool { return fs.planned[name] }

func proxyOf(ctx context.Context, name string) (*faultproxy.Proxy, error) {
	p, ok := faultKey.Of(scenario.From(ctx)).proxies[name]
	if !ok {
		return nil, fmt.Errorf("%q has no fault proxy (declare it with: the kintone traffic of %q goes through a fault proxy, before it starts)", name, name)
	}
	return p, nil
}

func (faultDomain) switchMode(ctx context.Context, name, mode string) error {
	fs := faultKey.Of(scenario.From(ctx))
	p, err := proxyOf(ctx, name)
	switch {
	case err != nil && !fs.planned[name]:
		return err
	case err != nil: // planned, not started yet: set when its proxy starts
		if fs.pendingMode == nil {
			fs.pendingMode = map[string]faultproxy.Mode{}
		}
		fs.pendingMode[name] = modesByText[mode]
	default:
		if err := p.SetMode(modesByText[mode]); err != nil {
			return err
		}
	}
	kit.SceneOf(ctx).St.Note("fault proxy of "+name, "mode "+string(modesByText[mode]))
	return nil
}

// droppedAtLeast waits (bounded) until the proxy of the named process has dropped n requests
// in block mode — FlowNet's heartbeats and drain retries during an outage — and notes how
// many it dropped by then. It stops early when the process has exited.
func (faultDomain) droppedAtLeast(ctx context.Context, name string, n int) error {
	sc := kit.SceneOf(ctx)
	p, err := proxyOf(ctx, name)
	if err != nil {
		return err
	}
	proc, err := kit.ProcessesOf(ctx).Resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	seen := 0
	err = wait.For(ctx, wait.BlockedRequests, fmt.Sprintf("the fault proxy of %s to drop %d requests", name, n), func(ctx context.Context) (bool, string, error) {
		seen = p.Counts().Blocked
		if seen >= n {
			return true, fmt.Sprintf("%d dropped", seen), nil
		}
		if res, done := proc.Proc.Exited(); done {
			return false, "", wait.Permanent(fmt.Errorf("%q exited (%s) after %d dropped requests", name, res, seen))
		}
		return false, fmt.Sprintf("%d dropped", seen), nil
	})
	if err != nil {
		return err
	}
	sc.St.Note("dropped requests of "+name, countSummary(p.Counts()))
	return sc.St.On("harness.fault.firings").Assert("requests dropped by the fault proxy of "+name, fmt.Sprintf("at least %d", n), seen, seen >= n)
}

// passBeforeLeaseDeadline ends an outage close to, but before, the lease deadline (the
// original unblocked 26 s into a 30 s lease): the deadline is the time of the last lease
// write that passed the proxy with a 2xx (the lock's acquisition or a heartbeat: a request
// touching lease_expires_at) plus the lease the feature names (the fixture's). It waits until
// at most left seconds remain, checks that the deadline has not passed, and switches to pass.
func (faultDomain) passBeforeLeaseDeadline(ctx context.Context, name string, left, lease int) error {
	sc := kit.SceneOf(ctx)
	p, err := proxyOf(ctx, name)
	if err != nil {
		return err
	}
	last, deadline, err := leaseDeadlineOf(name, p.Traffic(), lease)
	if err != nil {
		return err
	}
	switchAt := deadline.Add(-time.Duration(left) * time.Second)
	err = wait.For(ctx, wait.LeaseExpiry, fmt.Sprintf("%d s before the lease deadline of %s", left, name), func(ctx context.Context) (bool, string, error) {
		now := time.Now()
		return !now.Before(switchAt), fmt.Sprintf("%s to the lease deadline", deadline.Sub(now).Round(time.Second)), nil
	})
	if err != nil {
		return err
	}
	if err := p.SetMode(faultproxy.ModePass); err != nil {
		return err
	}
	now := time.Now()
	sc.St.Note("fault proxy of "+name, fmt.Sprintf("mode pass %s before the lease deadline (last lease write %s, %s dropped)",
		deadline.Sub(now).Round(time.Millisecond), last.Format(time.RFC3339Nano), fmt.Sprint(p.Counts().Blocked)))
	return sc.St.On("harness.fault.outage").Assert("outage of "+name+" ended before the lease deadline", "before "+deadline.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), now.Before(deadline))
}
