package proxy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// windowDomain: windows held open by a barrier instead of hoped for from a slow tenant.
// Wherever a scenario needs a kSQL-Flow job to be running at a chosen moment (the child to
// kill, the long node under STOP or CLOSE, the holder of a job lock), a barrier in the
// scenario's kSQL-Flow proxy (ksqlproxy.go) holds one of the job's business reads until the
// scenario has done what it needs. The job's SQL is the original's; only the base URL of the
// kSQL-Flow config changes, so the window is the same on a tenant of any speed.
//
// The proxy is in place before the scenario's first FlowNet command that can start kSQL-Flow
// (startFlowNet puts it there), so a hold may be declared at any point: before the first run
// (the common case), or right before the run it must hold when earlier runs of the scope
// read the same app (P2-01, P2-16). FlowNet's own traffic goes through its own fault proxy,
// else the scenario's counting proxy (apiproxy.go).
type windowDomain struct{}

func (d windowDomain) register(reg stepdef.Registry) {
	reg.Step(`^barrier "([^"]+)" holds the first read of the (customers|deals) app by the scope's kSQL-Flow jobs$`, d.holdFirstRead)
	reg.Step(`^the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy$`, d.jobsGoThroughTheProxy)
	reg.Step(`^barrier "([^"]+)" is released once the fault proxy of "([^"]+)" has passed a heartbeat (\d+) s or more after its first lease write$`, d.releaseAfterAHeartbeat)
}

// windowProxyName names the proxy of the scope's kSQL-Flow jobs in barriers and traffic.
const windowProxyName = "the scope's kSQL-Flow jobs"

var businessRoles = map[string]string{"customers": target.RoleCustomers, "deals": target.RoleDeals}

func (windowDomain) holdFirstRead(ctx context.Context, name, app string) error {
	sc := kit.SceneOf(ctx)
	b, err := HoldReadBarrier(ctx, name, businessRoles[app])
	if err != nil {
		return err
	}
	// Nothing can arrive any more once every FlowNet process has exited.
	b.Ended = func() (string, bool) {
		if kit.ProcessesOf(ctx).FlownetDone() {
			return "every FlowNet process of the scenario has exited", true
		}
		return "", false
	}
	sc.St.Note("held window "+name, "the first "+app+" read of the scope's kSQL-Flow jobs is held until the scenario releases it")
	return nil
}

// HoldReadBarrier installs, in the scenario's kSQL-Flow proxy (started here if no FlowNet
// command started it yet), a barrier that holds the next read of the business app of role (a
// records or cursor request, GET or method-override POST) before it is sent, and registers it
// under name for the barrier steps.
func HoldReadBarrier(ctx context.Context, name, role string) (*BarrierEntry, error) {
	sc := kit.SceneOf(ctx)
	kp := KsqlProxyKey.Of(sc.St)
	if err := kp.Ensure(ctx, sc); err != nil {
		return nil, err
	}
	bs := BarrierKey.Of(sc.St)
	if err := bs.unused(name); err != nil {
		return nil, err
	}
	appID := sc.App(role)
	if appID == "" {
		return nil, fmt.Errorf("barrier %q: the target has no %s app", name, role)
	}
	b := faultproxy.Barrier{
		ID:    kit.FixturesOf(ctx).Scope().BarrierID(name),
		Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/records(/cursor)?\.json$`, App: appID},
	}
	p, err := kp.addBarrier(b)
	if err != nil {
		return nil, fmt.Errorf("barrier %q: %w", name, err)
	}
	e := &BarrierEntry{name: name, ID: b.ID, process: windowProxyName, proxy: p}
	return e, bs.addBarrier(e)
}

// --- Held windows declared after earlier runs (P2-01, P2-16) ---------------------------------
//
// A scenario whose long node runs only after other runs of the same scope (a FAILED first run,
// a finished run, a poller's rejection) cannot declare its hold before its first FlowNet
// command: those runs' own reads of the app would meet the barrier first. It declares the hold
// right before the run it must hold; the step below says in the feature that the scope's
// kSQL-Flow jobs reach kintone through the proxy from the start (which every scenario's do).

// jobsGoThroughTheProxy puts the scope's kSQL-Flow proxy in place without holding anything
// yet (a no-op when a FlowNet command already did).
func (windowDomain) jobsGoThroughTheProxy(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	if err := KsqlProxyKey.Of(sc.St).Ensure(ctx, sc); err != nil {
		return err
	}
	sc.St.Note("kSQL-Flow proxy", "the scope's kSQL-Flow jobs reach kintone through the scenario's proxy; holds are declared later, before the run they hold")
	return nil
}

// --- A window held for FlowNet's heartbeats (m7-03) -------------------------------------------
//
// A call budget per run (m7-03: heartbeats 1..30) means something only for a run that lasts:
// the original's long read took about one heartbeat interval. The long read is held until
// FlowNet's own fault proxy has passed a heartbeat at least the named time after the run's
// first lease write (the lock's acquisition), so the run spans that interval on a tenant of
// any speed. The condition is on the clock of the lease, not on a heartbeat count: a FlowNet
// that heartbeats too often still shows it, because the hold lasts the same time.

// releaseAfterAHeartbeat waits for a 2xx heartbeat PUT of the named FlowNet process sent secs
// or more after its first 2xx lease write, then releases the barrier. The wait is bounded by
// BarrierArrival (a minute) and, before that, by the proxy's hold bound below kSQL-Flow's own
// HTTP timeout (a hold asked to last longer is refused); a heartbeat interval of seconds meets
// the condition long before. It stops
// early when that process has exited: no heartbeat can come any more.
func (windowDomain) releaseAfterAHeartbeat(ctx context.Context, name, process string, secs int) error {
	sc := kit.SceneOf(ctx)
	b, p, err := reachedBarrier(ctx, name)
	if err != nil {
		return err
	}
	fp, err := proxyOf(ctx, process)
	if err != nil {
		return err
	}
	fn, err := kit.ProcessesOf(ctx).Resolve(`"` + process + `"`)
	if err != nil {
		return err
	}
	after := time.Duration(secs) * time.Second
	if bound := KsqlProxyKey.Of(sc.St).bound(); after >= bound {
		return fmt.Errorf("barrier %q cannot be held %s: kSQL-Flow's request timeout (describe-profile httpTimeoutMs) bounds every hold to %s", name, after, bound)
	}
	var first, beat time.Time
	heartbeats := 0
	err = wait.For(ctx, wait.BarrierArrival, fmt.Sprintf("a heartbeat of %s %d s after its first lease write", process, secs), func(context.Context) (bool, string, error) {
		first, beat, heartbeats = heartbeatAfterFirstLeaseWrite(fp.Traffic(), after)
		if !beat.IsZero() {
			return true, fmt.Sprintf("heartbeat %s after the first lease write", beat.Sub(first).Round(time.Millisecond)), nil
		}
		if res, done := fn.Proc.Exited(); done {
			return false, "", wait.Permanent(fmt.Errorf("%q exited (%s) before it passed a heartbeat %d s after its first lease write (%d heartbeats)", process, res, secs, heartbeats))
		}
		if first.IsZero() {
			return false, "no lease write yet", nil
		}
		return false, fmt.Sprintf("%d heartbeats, %s since the first lease write", heartbeats, time.Since(first).Round(time.Second)), nil
	})
	if err != nil {
		return err
	}
	if err := b.Release(p); err != nil {
		return err
	}
	sc.St.Note("held window "+name, fmt.Sprintf("released %s after the first lease write of %s, once a heartbeat passed %s after it (heartbeats by then: %d)",
		b.releasedAt.Sub(first).Round(time.Millisecond), process, beat.Sub(first).Round(time.Millisecond), heartbeats))
	return nil
}

// heartbeatAfterFirstLeaseWrite reads a proxy's requests (in the order they completed, so
// times are compared, not positions): the arrival of the first 2xx lease write (a request
// touching lease_expires_at), of the first 2xx heartbeat at least after that (zero: none
// yet), and how many 2xx heartbeats passed in all.
func heartbeatAfterFirstLeaseWrite(lines []faultproxy.TrafficLine, after time.Duration) (first, beat time.Time, heartbeats int) {
	for _, l := range lines {
		if l.Status/100 == 2 && slices.Contains(l.Fields, "lease_expires_at") && (first.IsZero() || l.At.Before(first)) {
			first = l.At
		}
	}
	for _, l := range lines {
		if l.Status/100 != 2 || !l.Heartbeat {
			continue
		}
		heartbeats++
		if !first.IsZero() && l.At.Sub(first) >= after && (beat.IsZero() || l.At.Before(beat)) {
			beat = l.At
		}
	}
	return first, beat, heartbeats
}
