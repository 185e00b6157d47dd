package proxy

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// barrierDomain: barriers in the fault proxy of a named FlowNet process (faults.go) — one
// request, by method, endpoint, app and a field it carries, held before it is sent or after
// it succeeded — and the steps that wait for a barrier (of those proxies or of the scope's
// kSQL-Flow proxy, windows.go) to hold its request and release it, each by name.
type barrierDomain struct{}

func (d barrierDomain) register(reg stepdef.Registry) {
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the (GET|POST|PUT|DELETE) of (record|records) in the (state|audit|request) app (before it is sent|after it succeeded)(?: when it carries "([^"]+)")?$`, d.addBarrier)
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the (GET|POST|PUT|DELETE) of (record|records) in the (state|audit|request) app (before it is sent|after it succeeded) when it carries "([^"]+)", the first sent after the (POST|PUT) of (record|records) in the (state|audit|request) app carrying "([^"]+)"$`, d.addArmedBarrier)
	reg.Step(`^barrier "([^"]+)" is reached$`, d.barrierIsReached)
	reg.Step(`^barrier "([^"]+)" is released$`, d.releaseBarrier)
}

// barrierState: the scenario's barriers by name, whichever proxy holds them.
type barrierState struct {
	barriers map[string]*BarrierEntry
	// pending are barriers declared for a planned process before it started: installed in
	// its proxy when the proxy starts, before the process sends anything (a poller claims
	// within milliseconds of its start, too soon for a barrier added afterwards).
	pending map[string][]faultproxy.Barrier
}

var BarrierKey = scenario.NewKey[barrierState]("barriers")

// BarrierEntry is one named barrier, in a fault proxy or the kSQL-Flow proxy, and what it saw.
type BarrierEntry struct {
	name, ID, process string
	Reached           bool
	releasedAt        time.Time // when the scenario let the held request go (zero: never)
	// proxy is set for a barrier of a proxy that belongs to no single named process (the
	// scope's kSQL-Flow proxy, windows.go); ended then says when nothing can arrive any more.
	proxy *faultproxy.Proxy
	Ended func() (why string, done bool)
}

// roleOfApp maps the feature's app names to target roles: never a raw app id in a feature.
var roleOfApp = map[string]string{"state": target.RoleState, "audit": target.RoleAudit, "request": target.RoleRequest}

func (barrierDomain) addBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field string) error {
	return InstallBarrier(ctx, name, process, method, endpoint, app, phase, field, "", nil)
}

// addArmedBarrier holds the first matching request sent after another one (the arming
// request) reached the proxy, e.g. the first heartbeat after a node's Attempt was created
// (p2-16-05): FlowNet also heartbeats before its writes (product-contract §3.7), so "the
// first heartbeat" of a resumed run is one before its node even starts.
func (barrierDomain) addArmedBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field, afterMethod, afterEndpoint, afterApp, afterField string) error {
	appID := kit.SceneOf(ctx).App(roleOfApp[afterApp])
	if appID == "" {
		return fmt.Errorf("barrier %q: the target has no %s app", name, afterApp)
	}
	after := &faultproxy.Match{Path: `/k/v1/` + regexp.QuoteMeta(afterEndpoint+".json") + `$`, Method: afterMethod,
		Body: &faultproxy.BodyMatch{App: appID, Field: afterField}}
	return InstallBarrier(ctx, name, process, method, endpoint, app, phase, field, "", after)
}

// InstallBarrier installs (or plans, for a process not started yet) one barrier; recordID,
// when given, must equal the body's top-level "id"; after, when given, arms it (only a
// request arriving after one matching after is held).
func InstallBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field, recordID string, after *faultproxy.Match) error {
	sc := kit.SceneOf(ctx)
	if liftBarrier(sc.St, name, process) { // explore.go
		return nil
	}
	p, err := proxyOf(ctx, process)
	if err != nil && !faultKey.Of(sc.St).isPlanned(process) {
		return err
	}
	bs := BarrierKey.Of(sc.St)
	if err := bs.unused(name); err != nil {
		return err
	}
	appID := sc.App(roleOfApp[app])
	if appID == "" {
		return fmt.Errorf("barrier %q: the target has no %s app", name, app)
	}
	b := faultproxy.Barrier{
		ID:    kit.FixturesOf(ctx).Scope().BarrierID(name),
		Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/` + regexp.QuoteMeta(endpoint+".json") + `$`, Method: method,
			Body: &faultproxy.BodyMatch{App: appID, ID: recordID, Field: field}},
		After: after,
	}
	if phase == "after it succeeded" {
		b.Phase = faultproxy.PhaseAfterSuccess
	}
	if p == nil { // planned, not started yet: installed when its proxy starts
		if bs.pending == nil {
			bs.pending = map[string][]faultproxy.Barrier{}
		}
		bs.pending[process] = append(bs.pending[process], b)
	} else if err := p.AddBarrier(b); err != nil {
		return fmt.Errorf("barrier %q: %w", name, err)
	}
	return bs.addBarrier(&BarrierEntry{name: name, ID: b.ID, process: process})
}

// unused refuses a barrier name the scenario already installed.
func (bs *barrierState) unused(name string) error {
	if _, dup := bs.barriers[name]; dup {
		return fmt.Errorf("barrier %q is already installed", name)
	}
	return nil
}

// addBarrier registers an installed barrier under its name for the barrier steps; the
// scope's kSQL-Flow proxy (windows.go) registers its holds here too.
func (bs *barrierState) addBarrier(e *BarrierEntry) error {
	if err := bs.unused(e.name); err != nil {
		return err
	}
	if bs.barriers == nil {
		bs.barriers = map[string]*BarrierEntry{}
	}
	bs.barriers[e.name] = e
	return nil
}

func BarrierOf(ctx context.Context, name string) (*BarrierEntry, *faultproxy.Proxy, error) {
	b, ok := BarrierKey.Of(scenario.From(ctx)).barriers[name]
	if err := liftedError(scenario.From(ctx), name); err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("no barrier %q was installed", name)
	}
	if b.proxy != nil {
		return b, b.proxy, nil
	}
	p, err := proxyOf(ctx, b.process)
	return b, p, err
}

// barrierIsReached waits (bounded) until the barrier holds a request. It stops early when the
// process behind the proxy has exited: nothing can arrive any more.
func (barrierDomain) barrierIsReached(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	if lifted(sc.St, name) {
		return nil
	}
	b, p, err := BarrierOf(ctx, name)
	if err != nil {
		return err
	}
	ended := b.Ended
	if ended == nil {
		proc, err := kit.ProcessesOf(ctx).Resolve(`"` + b.process + `"`)
		if err != nil {
			return err
		}
		ended = func() (string, bool) {
			if res, done := proc.Proc.Exited(); done {
				return fmt.Sprintf("%q exited (%s)", b.process, res), true
			}
			return "", false
		}
	}
	var seen faultproxy.Arrival
	err = wait.For(ctx, wait.BarrierArrival, "barrier "+name+" to hold a request", func(ctx context.Context) (bool, string, error) {
		for _, a := range p.Arrivals() {
			if a.BarrierID == b.ID {
				seen = a
				return true, "held " + a.Method + " " + a.Path, nil
			}
		}
		if why, done := ended(); done {
			return false, "", wait.Permanent(fmt.Errorf("%s before barrier %s was reached", why, name))
		}
		return false, "not yet", nil
	})
	if err != nil {
		return err
	}
	b.Reached = true
	return sc.St.On("harness.barrier").Equal("barrier "+name+" held request", b.ID, seen.BarrierID)
}

func (barrierDomain) releaseBarrier(ctx context.Context, name string) error {
	if lifted(scenario.From(ctx), name) {
		return nil
	}
	b, p, err := reachedBarrier(ctx, name)
	if err != nil {
		return err
	}
	return b.Release(p)
}

// reachedBarrier is a barrier the scenario may release: installed, and seen holding a request.
func reachedBarrier(ctx context.Context, name string) (*BarrierEntry, *faultproxy.Proxy, error) {
	b, p, err := BarrierOf(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if !b.Reached {
		return nil, nil, fmt.Errorf("barrier %q was not reached yet: wait for it first (barrier %q is reached)", name, name)
	}
	return b, p, nil
}

// Release lets the held request go and notes when: the record shows the hold as At..ReleasedAt.
func (b *BarrierEntry) Release(p *faultproxy.Proxy) error {
	if err := p.Release(b.ID); err != nil {
		return err
	}
	b.releasedAt = time.Now()
	return nil
}

// ReleasedAt is when the scenario let barrier name's held request go (an error if it never did).
func (bs *barrierState) ReleasedAt(name string) (time.Time, error) {
	b, ok := bs.barriers[name]
	switch {
	case !ok:
		return time.Time{}, fmt.Errorf("no barrier %q was installed", name)
	case b.releasedAt.IsZero():
		return time.Time{}, fmt.Errorf("barrier %q was never released", name)
	}
	return b.releasedAt, nil
}

// installPending installs in p, the proxy of process name that has just started, the
// barriers declared for it before it started.
func (bs *barrierState) installPending(name string, p *faultproxy.Proxy) error {
	for _, b := range bs.pending[name] {
		if err := p.AddBarrier(b); err != nil {
			return fmt.Errorf("barrier %s of %q: %w", b.ID, name, err)
		}
	}
	delete(bs.pending, name)
	return nil
}

// byID are the installed barriers by their proxy id, for the record of a closing proxy.
func (bs *barrierState) byID() map[string]*BarrierEntry {
	out := make(map[string]*BarrierEntry, len(bs.barriers))
	for _, b := range bs.barriers {
		out[b.ID] = b
	}
	return out
}
