package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/harness/faultproxy"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/results"
)

// faultDomain: a fault proxy between one named FlowNet process (and the children that
// inherit its base URL, e.g. a poller's runs) and kintone. Feature text declares the proxy
// before the process starts, switches its mode, and holds single requests at barriers that
// it waits for and releases. kSQL-Flow keeps the direct URL: only FlowNet's traffic passes.
type faultDomain struct{}

func (d faultDomain) register(reg stepdef.Registry) {
	reg.Step(`^the kintone traffic of "([^"]+)" goes through a fault proxy$`, d.trafficGoesThroughAProxy)
	reg.Step(`^the fault proxy of "([^"]+)" (passes everything|blocks everything|blocks writes)$`, d.switchMode)
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the (GET|POST|PUT|DELETE) of (record|records) in the (state|audit|request) app (before it is sent|after it succeeded)(?: when it carries "([^"]+)")?$`, d.addBarrier)
	reg.Step(`^barrier "([^"]+)" is reached$`, d.barrierIsReached)
	reg.Step(`^barrier "([^"]+)" is released$`, d.releaseBarrier)
}

// faultState: the proxies of the scenario by process name, and its barriers by name.
type faultState struct {
	planned  map[string]bool
	proxies  map[string]*faultproxy.Proxy
	barriers map[string]*barrierEntry
	// pending are barriers declared for a planned process before it started: installed in
	// its proxy when the proxy starts, before the process sends anything (a poller claims
	// within milliseconds of its start, too soon for a barrier added afterwards).
	pending map[string][]faultproxy.Barrier
	// pendingMode is a mode set for a planned process before it started, likewise.
	pendingMode map[string]faultproxy.Mode
}

type barrierEntry struct {
	name, id, process string
	reached           bool
}

var faultKey = scenario.NewKey[faultState]("faults")

var modesByText = map[string]faultproxy.Mode{
	"passes everything": faultproxy.ModePass,
	"blocks everything": faultproxy.ModeBlock,
	"blocks writes":     faultproxy.ModeBlockWrites,
}

func (faultDomain) trafficGoesThroughAProxy(ctx context.Context, name string) error {
	fs := faultKey.Of(scenario.From(ctx))
	for _, p := range processesOf(ctx).all {
		if p.name == name {
			return fmt.Errorf("%q has already started: declare its fault proxy before it starts", name)
		}
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
	sc := sceneOf(ctx)
	fs := faultKey.Of(sc.st)
	if !fs.planned[name] {
		return nil, nil
	}
	dir := filepath.Join(sc.st.WorkDir, "proxy-"+procFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	t := sc.suite.Target
	p, err := faultproxy.New(faultproxy.Options{Name: procFileName(name), Upstream: t.BaseURL, UpstreamCA: t.CAFile,
		TLS: strings.HasPrefix(t.BaseURL, "https:"), LogDir: dir})
	if err != nil {
		return nil, fmt.Errorf("fault proxy for %q: %w", name, err)
	}
	if fs.proxies == nil {
		fs.proxies = map[string]*faultproxy.Proxy{}
	}
	fs.proxies[name] = p
	for _, b := range fs.pending[name] {
		if err := p.AddBarrier(b); err != nil {
			return nil, fmt.Errorf("barrier %s of %q: %w", b.ID, name, err)
		}
	}
	delete(fs.pending, name)
	if m, ok := fs.pendingMode[name]; ok {
		if err := p.SetMode(m); err != nil {
			return nil, fmt.Errorf("fault proxy of %q: %w", name, err)
		}
		delete(fs.pendingMode, name)
	}
	st := sc.st
	st.Defer("close the fault proxy of "+name, func(context.Context) error {
		err := p.Close()
		st.AddTraffic(trafficCounts(name, p.Counts()))
		for _, a := range p.Arrivals() {
			st.AddBarrierArrival(results.BarrierArrival{ID: a.BarrierID, Phase: string(a.Phase), Method: a.Method, Path: a.Path, Status: a.ResponseStatus, At: a.At})
		}
		return err
	})
	env := []string{"KSQL_FLOWNET_BASE_URL=" + p.URL()}
	if p.CAFile() != "" {
		bundle := filepath.Join(dir, "ca-bundle.pem")
		files := []string{p.CAFile()}
		if t.CAFile != "" {
			files = append([]string{t.CAFile}, files...)
		}
		if err := faultproxy.WriteCABundle(bundle, files...); err != nil {
			return nil, err
		}
		env = append(env, "SSL_CERT_FILE="+bundle, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	fmt.Fprintf(st.Log, "  fault proxy for %q at %s\n", name, p.URL())
	return env, nil
}

// trafficCounts names a proxy's counters for the scenario record.
func trafficCounts(name string, c faultproxy.Counts) map[string]int {
	prefix := procFileName(name) + "."
	out := map[string]int{prefix + "total": c.Total, prefix + "blocked": c.Blocked, prefix + "file": c.File,
		prefix + "other": c.Other, prefix + "heartbeat": c.Heartbeat, prefix + "barrier_timeouts": c.BarrierTimeouts,
		prefix + "upstream_errors": c.UpstreamErrors}
	methods := make([]string, 0, len(c.Records))
	for m := range c.Records {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		out[prefix+"records."+m] = c.Records[m]
	}
	return out
}

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
	sceneOf(ctx).st.Note("fault proxy of "+name, "mode "+string(modesByText[mode]))
	return nil
}

// roleOfApp maps the feature's app names to target roles: never a raw app id in a feature.
var roleOfApp = map[string]string{"state": target.RoleState, "audit": target.RoleAudit, "request": target.RoleRequest}

func (faultDomain) addBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field string) error {
	sc := sceneOf(ctx)
	fs := faultKey.Of(sc.st)
	p, err := proxyOf(ctx, process)
	if err != nil && !fs.planned[process] {
		return err
	}
	if _, dup := fs.barriers[name]; dup {
		return fmt.Errorf("barrier %q is already installed", name)
	}
	appID := sc.app(roleOfApp[app])
	if appID == "" {
		return fmt.Errorf("barrier %q: the target has no %s app", name, app)
	}
	b := faultproxy.Barrier{
		ID:    fixturesOf(ctx).scope.BarrierID(name),
		Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/` + regexp.QuoteMeta(endpoint+".json") + `$`, Method: method,
			Body: &faultproxy.BodyMatch{App: appID, Field: field}},
	}
	if phase == "after it succeeded" {
		b.Phase = faultproxy.PhaseAfterSuccess
	}
	if p == nil { // planned, not started yet: installed when its proxy starts
		if fs.pending == nil {
			fs.pending = map[string][]faultproxy.Barrier{}
		}
		fs.pending[process] = append(fs.pending[process], b)
	} else if err := p.AddBarrier(b); err != nil {
		return fmt.Errorf("barrier %q: %w", name, err)
	}
	if fs.barriers == nil {
		fs.barriers = map[string]*barrierEntry{}
	}
	fs.barriers[name] = &barrierEntry{name: name, id: b.ID, process: process}
	return nil
}

func barrierOf(ctx context.Context, name string) (*barrierEntry, *faultproxy.Proxy, error) {
	b, ok := faultKey.Of(scenario.From(ctx)).barriers[name]
	if !ok {
		return nil, nil, fmt.Errorf("no barrier %q was installed", name)
	}
	p, err := proxyOf(ctx, b.process)
	return b, p, err
}

// barrierIsReached waits (bounded) until the barrier holds a request. It stops early when the
// process behind the proxy has exited: nothing can arrive any more.
func (faultDomain) barrierIsReached(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	b, p, err := barrierOf(ctx, name)
	if err != nil {
		return err
	}
	proc, err := processesOf(ctx).resolve(`"` + b.process + `"`)
	if err != nil {
		return err
	}
	var seen faultproxy.Arrival
	err = wait.For(ctx, wait.BarrierArrival, "barrier "+name+" to hold a request", func(ctx context.Context) (bool, string, error) {
		for _, a := range p.Arrivals() {
			if a.BarrierID == b.id {
				seen = a
				return true, "held " + a.Method + " " + a.Path, nil
			}
		}
		if res, done := proc.proc.Exited(); done {
			return false, "", wait.Permanent(fmt.Errorf("%q exited (%s) before barrier %s was reached", b.process, res, name))
		}
		return false, "not yet", nil
	})
	if err != nil {
		return err
	}
	b.reached = true
	return sc.st.Equal("barrier "+name+" held request", b.id, seen.BarrierID)
}

func (faultDomain) releaseBarrier(ctx context.Context, name string) error {
	b, p, err := barrierOf(ctx, name)
	if err != nil {
		return err
	}
	if !b.reached {
		return fmt.Errorf("barrier %q was not reached yet: wait for it first (barrier %q is reached)", name, name)
	}
	return p.Release(b.id)
}
