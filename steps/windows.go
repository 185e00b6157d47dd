package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/harness/faultproxy"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
)

// windowDomain: windows held open by a barrier instead of hoped for from a slow tenant.
// Wherever a scenario needs a kSQL-Flow job to be running at a chosen moment (the child to
// kill, the long node under STOP or CLOSE, the holder of a job lock), the scope's kSQL-Flow
// processes reach kintone through a fault proxy of their own, and a barrier holds one of
// their business reads until the scenario has done what it needs. The job's SQL is the
// original's; only the base URL of the kSQL-Flow config changes, so the window is the same
// on a tenant of any speed.
//
// The proxy is the scenario's, created by the first hold that is declared, and from then on
// every FlowNet command of the scenario hands its kSQL-Flow children the config copy that
// points at it. FlowNet stores the profile's base URL in the run's resolved profile snapshot
// and a resume re-checks it (product-contract §1.3), so the proxy must be in place before
// the scenario's first FlowNet command: either the first hold is declared before it, or
// `the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy` is, and the hold
// just before the run it holds; starting the proxy later is refused. FlowNet's own traffic
// goes through its own fault proxy, else the scenario's counting proxy (apiproxy.go).
type windowDomain struct{}

func (d windowDomain) register(reg stepdef.Registry) {
	reg.Step(`^barrier "([^"]+)" holds the first read of the (customers|deals) app by the scope's kSQL-Flow jobs$`, d.holdFirstRead)
	reg.Step(`^the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy$`, d.jobsGoThroughTheProxy)
	reg.Step(`^barrier "([^"]+)" is released once the fault proxy of "([^"]+)" has passed a heartbeat (\d+) s or more after its first lease write$`, d.releaseAfterAHeartbeat)
}

// windowProxyName names the proxy of the scope's kSQL-Flow jobs in barriers and traffic.
const windowProxyName = "the scope's kSQL-Flow jobs"

// windowState is the scenario's kSQL-Flow proxy and the config copy that points at it.
type windowState struct {
	proxy  *faultproxy.Proxy
	config string   // the kSQL-Flow config copy whose base URL is the proxy
	env    []string // what a FlowNet command (and so its kSQL-Flow children) gets
	// holdBound is the longest the proxy holds a request: below the profile's httpTimeoutMs.
	holdBound time.Duration
}

var windowKey = scenario.NewKey[windowState]("windows")

// kintoneConfig is the kSQL-Flow config copy whose base URL is the proxy ("" before ensure).
func (ws *windowState) kintoneConfig() string { return ws.config }

// childEnv is what a FlowNet command (and a standalone kSQL-Flow) of the scenario gets.
func (ws *windowState) childEnv() []string { return ws.env }

// held says whether the proxy holds (or held) a request at the barrier id.
func (ws *windowState) held(barrierID string) bool {
	return ws.proxy != nil && slices.ContainsFunc(ws.proxy.Arrivals(), func(a faultproxy.Arrival) bool { return a.BarrierID == barrierID })
}

// release lets the request held at a barrier of this proxy go.
func (ws *windowState) release(b *barrierEntry) error { return b.release(ws.proxy) }

// windowBarrierTimeout bounds a hold nobody releases, before the bound of the profile's own
// HTTP timeout (windowState.holdBound, below describe-profile's httpTimeoutMs) makes it
// shorter: a longer hold would fail the held read in the child. The scenarios hold for seconds.
const windowBarrierTimeout = 10 * time.Minute

var businessRoles = map[string]string{"customers": target.RoleCustomers, "deals": target.RoleDeals}

func (windowDomain) holdFirstRead(ctx context.Context, name, app string) error {
	sc := sceneOf(ctx)
	ws := windowKey.Of(sc.st)
	if err := ws.ensure(ctx, sc); err != nil {
		return err
	}
	b, err := holdReadBarrier(ctx, name, businessRoles[app])
	if err != nil {
		return err
	}
	// Nothing can arrive any more once every FlowNet process has exited.
	b.ended = func() (string, bool) {
		if processesOf(ctx).flownetDone() {
			return "every FlowNet process of the scenario has exited", true
		}
		return "", false
	}
	sc.st.Note("held window "+name, "the first "+app+" read of the scope's kSQL-Flow jobs is held until the scenario releases it")
	return nil
}

// holdReadBarrier installs, in the scenario's kSQL-Flow proxy, a barrier that holds the next
// read of the business app of role (a records or cursor request, GET or method-override
// POST) before it is sent, and registers it under name for the barrier steps.
func holdReadBarrier(ctx context.Context, name, role string) (*barrierEntry, error) {
	sc := sceneOf(ctx)
	ws := windowKey.Of(sc.st)
	if ws.proxy == nil {
		return nil, fmt.Errorf("barrier %q: the scope's kSQL-Flow proxy is not running", name)
	}
	fs := faultKey.Of(sc.st)
	if err := fs.unused(name); err != nil {
		return nil, err
	}
	appID := sc.app(role)
	if appID == "" {
		return nil, fmt.Errorf("barrier %q: the target has no %s app", name, role)
	}
	b := faultproxy.Barrier{
		ID:    fixturesOf(ctx).scope().BarrierID(name),
		Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/records(/cursor)?\.json$`, App: appID},
	}
	if err := ws.proxy.AddBarrier(b); err != nil {
		return nil, fmt.Errorf("barrier %q: %w", name, err)
	}
	e := &barrierEntry{name: name, id: b.ID, process: windowProxyName, proxy: ws.proxy}
	return e, fs.addBarrier(e)
}

// ensure starts the scenario's kSQL-Flow proxy and writes the config copy, once.
func (ws *windowState) ensure(ctx context.Context, sc *scene) error {
	if ws.proxy != nil {
		return nil
	}
	if len(processesOf(ctx).flownetCalls()) > 0 {
		return fmt.Errorf("the scope's kSQL-Flow proxy must be in place before the scenario's first FlowNet command: declare the hold earlier, or put the proxy in place first (the kintone traffic of the scope's kSQL-Flow jobs goes through a proxy) and declare the hold where it belongs (every run's kSQL-Flow children must reach kintone through the same proxy: the run's profile snapshot records the base URL)")
	}
	t := sc.suite.Target
	dir := filepath.Join(sc.st.WorkDir, "proxy-ksql-flow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts, bundle, err := scenarioProxyOptions(sc, "ksql-flow", dir)
	if err != nil {
		return err
	}
	orig, err := describeProfile(ctx, sc, t.KsqlFlowConfig)
	if err != nil {
		return err
	}
	// Every hold ends below kSQL-Flow's own request timeout: a longer one would fail the held
	// read inside the child, and the proxy's bound says why where the child could not.
	bound, err := orig.HoldBound(windowBarrierTimeout)
	if err != nil {
		return err
	}
	opts.BarrierTimeout = bound
	p, err := faultproxy.New(opts)
	if err != nil {
		return fmt.Errorf("kSQL-Flow proxy: %w", err)
	}
	st := sc.st
	if g := exploredJobsGate(st); g != nil { // explore.go
		p.SetGate(g)
	}
	st.Defer("close the kSQL-Flow proxy", func(context.Context) error { return closeAndRecord(st, "ksql-flow", p) })
	path, err := proxiedConfig(ctx, sc, orig, dir, p.URL())
	if err != nil {
		return err
	}
	ws.holdBound = bound
	ws.proxy, ws.config = p, path
	ws.env = []string{"KSQL_FLOW_CONFIG=" + path}
	if p.CAFile() != "" {
		// Node reads extra roots from NODE_EXTRA_CA_CERTS (on top of the system's); the bundle
		// holds the tenant's CA too, so FlowNet, which inherits the same variable, still
		// trusts the tenant it talks to directly.
		ws.env = append(ws.env, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	fmt.Fprintf(st.Log, "  kSQL-Flow proxy at %s (config copy %s)\n", p.URL(), path)
	return nil
}

// windowEnv is what every FlowNet command of the scenario adds to its environment: nothing
// until a hold was declared.
func windowEnv(sc *scene) []string {
	return windowKey.Of(sc.st).env
}

// scenarioCAState is the one CA that signs every proxy of the scenario, so each child needs a
// single bundle (tenant CA + this CA) whichever proxies it talks to.
type scenarioCAState struct {
	ca     *faultproxy.CA
	bundle string
}

var scenarioCAKey = scenario.NewKey[scenarioCAState]("proxy-ca")

// scenarioProxyOptions are the options every faultproxy of the scenario shares: the target
// upstream, the scenario's one CA (its bundle is returned for the children's environment), and
// the request counter with the tokens that tell a request's app.
func scenarioProxyOptions(sc *scene, name, dir string) (faultproxy.Options, string, error) {
	ca, bundle, err := scenarioCA(sc)
	if err != nil {
		return faultproxy.Options{}, "", err
	}
	t := sc.suite.Target
	return faultproxy.Options{Name: name, Upstream: t.BaseURL, UpstreamCA: t.CAFile, TLS: strings.HasPrefix(t.BaseURL, "https:"),
		CA: ca, LogDir: dir, Counter: sc.st.API, AppsByToken: appsByToken(t)}, bundle, nil
}

// flownetProxyEnv points a FlowNet process at proxy p: its base URL, and the scenario's one
// CA bundle for it and the kSQL-Flow children that inherit its environment (windows.go's
// and the CSV steps' proxies are signed by the same CA).
func flownetProxyEnv(p *faultproxy.Proxy, bundle string) []string {
	env := []string{"KSQL_FLOWNET_BASE_URL=" + p.URL()}
	if p.CAFile() != "" {
		env = append(env, "SSL_CERT_FILE="+bundle, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	return env
}

func scenarioCA(sc *scene) (*faultproxy.CA, string, error) {
	s := scenarioCAKey.Of(sc.st)
	if s.ca != nil {
		return s.ca, s.bundle, nil
	}
	ca, err := faultproxy.NewCA()
	if err != nil {
		return nil, "", fmt.Errorf("proxy CA: %w", err)
	}
	caFile := filepath.Join(sc.st.WorkDir, "proxy-ca.pem")
	if err := ca.WriteCertFile(caFile); err != nil {
		return nil, "", err
	}
	files := []string{caFile}
	if t := sc.suite.Target; t.CAFile != "" {
		files = append([]string{t.CAFile}, files...)
	}
	bundle := filepath.Join(sc.st.WorkDir, "proxy-ca-bundle.pem")
	if err := faultproxy.WriteCABundle(bundle, files...); err != nil {
		return nil, "", err
	}
	s.ca, s.bundle = ca, bundle
	return ca, bundle, nil
}

// --- Held windows declared after earlier runs (P2-01, P2-16) ---------------------------------
//
// A scenario whose long node runs only after other runs of the same scope (a FAILED first run,
// a finished run, a poller's rejection) cannot declare its hold before its first FlowNet
// command: those runs' own reads of the app would meet the barrier first. It puts the proxy
// in place up front with this step, and declares the hold right before the run it must hold.

// jobsGoThroughTheProxy puts the scope's kSQL-Flow proxy in place without holding anything
// yet; every FlowNet command from now on hands its kSQL-Flow children the config copy.
func (windowDomain) jobsGoThroughTheProxy(ctx context.Context) error {
	sc := sceneOf(ctx)
	ws := windowKey.Of(sc.st)
	if ws.proxy != nil {
		return fmt.Errorf("the scope's kSQL-Flow proxy is already in place: declare it once, before the scenario's first FlowNet command")
	}
	if err := ws.ensure(ctx, sc); err != nil {
		return err
	}
	sc.st.Note("kSQL-Flow proxy", "the scope's kSQL-Flow jobs reach kintone through the scenario's proxy; holds are declared later, before the run they hold")
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
	sc := sceneOf(ctx)
	b, p, err := reachedBarrier(ctx, name)
	if err != nil {
		return err
	}
	fp, err := proxyOf(ctx, process)
	if err != nil {
		return err
	}
	fn, err := processesOf(ctx).resolve(`"` + process + `"`)
	if err != nil {
		return err
	}
	after := time.Duration(secs) * time.Second
	if bound := windowKey.Of(sc.st).holdBound; after >= bound {
		return fmt.Errorf("barrier %q cannot be held %s: kSQL-Flow's request timeout (describe-profile httpTimeoutMs) bounds every hold to %s", name, after, bound)
	}
	var first, beat time.Time
	heartbeats := 0
	err = wait.For(ctx, wait.BarrierArrival, fmt.Sprintf("a heartbeat of %s %d s after its first lease write", process, secs), func(context.Context) (bool, string, error) {
		first, beat, heartbeats = heartbeatAfterFirstLeaseWrite(fp.Traffic(), after)
		if !beat.IsZero() {
			return true, fmt.Sprintf("heartbeat %s after the first lease write", beat.Sub(first).Round(time.Millisecond)), nil
		}
		if res, done := fn.proc.Exited(); done {
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
	if err := b.release(p); err != nil {
		return err
	}
	sc.st.Note("held window "+name, fmt.Sprintf("released %s after the first lease write of %s, once a heartbeat passed %s after it (heartbeats by then: %d)",
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
