package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// The scenario's proxies share one CA and one set of options (scenarioProxyOptions): the
// fault proxies of named FlowNet processes (faults.go), the kSQL-Flow proxy (ksqlproxy.go),
// and the counting proxies here. A FlowNet process without a fault proxy of its own still
// reaches kintone through one: a proxy of its own that only passes and counts, so that
// FlowNet's requests count on the scenario's API counter like the harness's own (kintone
// budgets requests per app and day), and so that the invariants judge its writes as its own
// (invariants/invariants.go: a Network lock is released by the process that holds it). It changes only
// the base URL FlowNet is given, as a fault proxy does (product-contract:
// KSQL_FLOWNET_BASE_URL), and trusts it through the scenario's CA bundle.

// appsByToken maps every token of the target to its app, so a proxy counts a request that
// names no app (a file upload or download) on its token's app.
func appsByToken(t *target.Target) map[string]string {
	out := map[string]string{}
	for _, a := range t.Apps {
		for _, tok := range a.Tokens {
			if tok != "" && a.ID != "" {
				out[tok] = a.ID
			}
		}
	}
	return out
}

// tokensByApp is the target's tokens per app as apicount.Transport takes them (app id →
// tokens, comma-separated).
func tokensByApp(t *target.Target) map[string]string {
	byApp := map[string][]string{}
	for tok, app := range appsByToken(t) {
		byApp[app] = append(byApp[app], tok)
	}
	out := map[string]string{}
	for app, toks := range byApp {
		out[app] = strings.Join(toks, ",")
	}
	return out
}

// countingProxyEnv starts the counting proxy of FlowNet process name and returns what
// points the process at it.
func countingProxyEnv(sc *kit.Scene, name string) ([]string, error) {
	dir := filepath.Join(sc.St.WorkDir, "proxy-count-"+kit.ProcFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	opts, bundle, err := ScenarioProxyOptions(sc, "count-"+kit.ProcFileName(name), dir, apicount.FlowNet)
	if err != nil {
		return nil, err
	}
	p, err := faultproxy.New(opts)
	if err != nil {
		return nil, fmt.Errorf("the counting proxy of %q: %w", name, err)
	}
	sc.St.Defer("close the counting proxy of "+name, func(context.Context) error { return p.Close() })
	JudgeWritesOf(sc.St, name, p)
	return flownetProxyEnv(p, bundle), nil
}

// scenarioCAState is the one CA that signs every proxy of the scenario, so each child needs a
// single bundle (tenant CA + this CA) whichever proxies it talks to.
type scenarioCAState struct {
	ca     *faultproxy.CA
	bundle string
}

var scenarioCAKey = scenario.NewKey[scenarioCAState]("proxy-ca")

// ScenarioProxyOptions are the options every faultproxy of the scenario shares: the target
// upstream, the scenario's one CA (its bundle is returned for the children's environment), and
// the request counter of the scenario for the origin whose process the proxy stands in front
// of, with the tokens that tell a request's app.
func ScenarioProxyOptions(sc *kit.Scene, name, dir, origin string) (faultproxy.Options, string, error) {
	ca, bundle, err := scenarioCA(sc)
	if err != nil {
		return faultproxy.Options{}, "", err
	}
	t := sc.Suite.Target
	return faultproxy.Options{Name: name, Upstream: t.BaseURL, UpstreamCA: t.CAFile, TLS: strings.HasPrefix(t.BaseURL, "https:"),
		CA: ca, LogDir: dir, Counter: sc.St.API.From(origin), AppsByToken: appsByToken(t), Judged: schedule.JudgedFields()}, bundle, nil
}

// flownetProxyEnv points a FlowNet process at proxy p: its base URL, and the scenario's one
// CA bundle for it and the kSQL-Flow children that inherit its environment (the kSQL-Flow
// proxy is signed by the same CA).
func flownetProxyEnv(p *faultproxy.Proxy, bundle string) []string {
	env := []string{"KSQL_FLOWNET_BASE_URL=" + p.URL()}
	if p.CAFile() != "" {
		env = append(env, "SSL_CERT_FILE="+bundle, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	return env
}

func scenarioCA(sc *kit.Scene) (*faultproxy.CA, string, error) {
	s := scenarioCAKey.Of(sc.St)
	if s.ca != nil {
		return s.ca, s.bundle, nil
	}
	ca, err := faultproxy.NewCA()
	if err != nil {
		return nil, "", fmt.Errorf("proxy CA: %w", err)
	}
	caFile := filepath.Join(sc.St.WorkDir, "proxy-ca.pem")
	if err := ca.WriteCertFile(caFile); err != nil {
		return nil, "", err
	}
	files := []string{caFile}
	if t := sc.Suite.Target; t.CAFile != "" {
		files = append([]string{t.CAFile}, files...)
	}
	bundle := filepath.Join(sc.St.WorkDir, "proxy-ca-bundle.pem")
	if err := faultproxy.WriteCABundle(bundle, files...); err != nil {
		return nil, "", err
	}
	s.ca, s.bundle = ca, bundle
	return ca, bundle, nil
}

// invariantParties are the proxies whose writes the invariants judge, by party name, in the
// order they started.
type invariantParties struct {
	names   []string
	proxies []*faultproxy.Proxy
}

var InvariantKey = scenario.NewKey[invariantParties]("invariant-parties")

// JudgeWritesOf makes the writes through proxy p count as party name's for the invariants.
func JudgeWritesOf(st *scenario.State, name string, p *faultproxy.Proxy) {
	ip := InvariantKey.Of(st)
	ip.names = append(ip.names, name)
	ip.proxies = append(ip.proxies, p)
}

// Parties are the party names and their proxies, in the order they started.
func (ip *invariantParties) Parties() ([]string, []*faultproxy.Proxy) { return ip.names, ip.proxies }
