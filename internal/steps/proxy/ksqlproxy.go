package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// The scenario's kSQL-Flow proxy. Every kSQL-Flow process of the scenario — the children
// FlowNet starts, the lock-conflict holder, the operator's inspect-lock and force-unlock-job —
// reaches kintone through one pass-through faultproxy of the scenario, so its requests count
// on the scenario's API counter per app (origin ksql-flow), as FlowNet's do through their
// proxies (apiproxy.go). The proxy changes nothing on its own; holds (windows.go,
// operator/lockconflict.go) add barriers to it and the CSV write fault (csv/csvfault.go) a fault.
//
// kSQL-Flow is pointed at it by a copy of the operator's config whose profile's base URL is
// the proxy and nothing else changed, proven by describe-profile (ksqlprofile.go), and trusts
// it through NODE_EXTRA_CA_CERTS (the scenario's one CA bundle). FlowNet stores the profile's
// base URL in a run's resolved profile snapshot and a resume re-checks it (product-contract
// §1.3), so every run of the scenario must see the same one: startFlowNet puts the proxy in
// place before the scenario's first FlowNet command that can start kSQL-Flow, and from then on
// every FlowNet command gets the copy. A hold or fault declared at any point later finds the
// proxy in place; one declared before that first command starts it early, which is the same.

// ksqlProxyState is the scenario's kSQL-Flow proxy and the config copy that points at it.
type ksqlProxyState struct {
	proxy  *faultproxy.Proxy
	config string   // the kSQL-Flow config copy whose base URL is the proxy
	env    []string // what a FlowNet command (and so its kSQL-Flow children) or a standalone kSQL-Flow gets
	// holdBound is the longest the proxy holds a request: below the profile's httpTimeoutMs.
	holdBound time.Duration
	// steered: a barrier or a fault was added, so its traffic and arrivals belong in the
	// scenario record; a proxy that only counted leaves its counts only.
	steered bool
}

var KsqlProxyKey = scenario.NewKey[ksqlProxyState]("ksql-flow-proxy")

// startsKsqlFlow are the FlowNet subcommands that can start kSQL-Flow children (run-network
// itself; poll-requests through the runs it spawns). product-contract §6: KSQL_FLOW_CONFIG
// is read by run-network.
var startsKsqlFlow = map[string]bool{"run-network": true, "poll-requests": true}

// ksqlFlowBarrierTimeout bounds a hold nobody releases, before the bound of the profile's own
// HTTP timeout (holdBound, below describe-profile's httpTimeoutMs) makes it shorter: a longer
// hold would fail the held read in the child. The scenarios hold for seconds.
const ksqlFlowBarrierTimeout = 10 * time.Minute

// Ensure starts the proxy and writes the config copy, once.
func (s *ksqlProxyState) Ensure(ctx context.Context, sc *kit.Scene) error {
	if s.proxy != nil {
		return nil
	}
	t := sc.Suite.Target
	dir := filepath.Join(sc.St.WorkDir, "proxy-ksql-flow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts, bundle, err := ScenarioProxyOptions(sc, "ksql-flow", dir, apicount.KsqlFlow)
	if err != nil {
		return err
	}
	orig, err := DescribeProfile(ctx, sc, t.KsqlFlowConfig)
	if err != nil {
		return err
	}
	// Every hold ends below kSQL-Flow's own request timeout: a longer one would fail the held
	// read inside the child, and the proxy's bound says why where the child could not.
	bound, err := orig.HoldBound(ksqlFlowBarrierTimeout)
	if err != nil {
		return err
	}
	opts.BarrierTimeout = bound
	p, err := faultproxy.New(opts)
	if err != nil {
		return fmt.Errorf("kSQL-Flow proxy: %w", err)
	}
	st := sc.St
	if g := exploredJobsGate(st); g != nil { // explore.go
		p.SetGate(g)
	}
	st.Defer("close the kSQL-Flow proxy", func(context.Context) error {
		if s.steered {
			err := CloseAndRecord(st, "ksql-flow", p)
			recordFaultFirings(st, sc, "ksql-flow", p)
			return err
		}
		return p.Close()
	})
	path, err := proxiedConfig(ctx, sc, orig, dir, p.URL())
	if err != nil {
		return err
	}
	s.holdBound = bound
	s.proxy, s.config = p, path
	s.env = []string{"KSQL_FLOW_CONFIG=" + path}
	if p.CAFile() != "" {
		// Node reads extra roots from NODE_EXTRA_CA_CERTS (on top of the system's); the bundle
		// holds the tenant's CA too, so FlowNet, which inherits the same variable, still
		// trusts the tenant it talks to directly.
		s.env = append(s.env, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	fmt.Fprintf(st.Log, "  kSQL-Flow proxy at %s (config copy %s)\n", p.URL(), path)
	return nil
}

// KintoneConfig is the kSQL-Flow config copy whose base URL is the proxy ("" before ensure).
func (s *ksqlProxyState) KintoneConfig() string { return s.config }

// ChildEnv is what a FlowNet command (and a standalone kSQL-Flow) of the scenario gets:
// nothing before the proxy is in place.
func (s *ksqlProxyState) ChildEnv() []string { return s.env }

// bound is the longest the proxy holds a request.
func (s *ksqlProxyState) bound() time.Duration { return s.holdBound }

// Held says whether the proxy holds (or held) a request at the barrier id.
func (s *ksqlProxyState) Held(barrierID string) bool {
	return s.proxy != nil && slices.ContainsFunc(s.proxy.Arrivals(), func(a faultproxy.Arrival) bool { return a.BarrierID == barrierID })
}

// addBarrier installs b in the proxy (which must be in place) and returns the proxy, for the
// barrier steps that release it.
func (s *ksqlProxyState) addBarrier(b faultproxy.Barrier) (*faultproxy.Proxy, error) {
	if s.proxy == nil {
		return nil, fmt.Errorf("barrier %s: the scenario's kSQL-Flow proxy is not running", b.ID)
	}
	if err := s.proxy.AddBarrier(b); err != nil {
		return nil, err
	}
	s.steered = true
	return s.proxy, nil
}

// Release lets the request held at a barrier of this proxy go.
func (s *ksqlProxyState) Release(b *BarrierEntry) error { return b.Release(s.proxy) }

// AddFault arms f in the proxy (which must be in place).
func (s *ksqlProxyState) AddFault(f faultproxy.Fault) error {
	if s.proxy == nil {
		return fmt.Errorf("fault %s: the scenario's kSQL-Flow proxy is not running", f.ID)
	}
	if err := s.proxy.AddFault(f); err != nil {
		return err
	}
	s.steered = true
	return nil
}

// FaultFirings are the firings of the proxy's fault id so far.
func (s *ksqlProxyState) FaultFirings(id string) []faultproxy.Firing {
	if s.proxy == nil {
		return nil
	}
	return s.proxy.FaultFirings(id)
}

// ksqlProxyEnv is what every FlowNet command of the scenario adds to its environment: the
// config copy and CA bundle once the proxy is in place.
func ksqlProxyEnv(sc *kit.Scene) []string {
	return KsqlProxyKey.Of(sc.St).ChildEnv()
}
