package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/harness/faultproxy"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/target"
)

// A FlowNet process without a fault proxy of its own still reaches kintone through one: a
// proxy of the scenario that only passes and counts, so that FlowNet's requests count on the
// scenario's API counter like the harness's own (kintone budgets requests per app and day).
// It changes only the base URL FlowNet is given, as a fault proxy does (product-contract:
// KSQL_FLOWNET_BASE_URL), and trusts it through the scenario's CA bundle.

type apiProxyState struct {
	proxy *faultproxy.Proxy
	env   []string
}

var apiProxyKey = scenario.NewKey[apiProxyState]("api-proxy")

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

// countingProxyEnv starts the scenario's counting proxy on first use and returns what points
// a FlowNet process at it.
func countingProxyEnv(sc *scene) ([]string, error) {
	s := apiProxyKey.Of(sc.st)
	if s.proxy != nil {
		return s.env, nil
	}
	dir := filepath.Join(sc.st.WorkDir, "proxy-flownet-count")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	opts, bundle, err := scenarioProxyOptions(sc, "flownet-count", dir)
	if err != nil {
		return nil, err
	}
	p, err := faultproxy.New(opts)
	if err != nil {
		return nil, fmt.Errorf("FlowNet's counting proxy: %w", err)
	}
	sc.st.Defer("close FlowNet's counting proxy", func(context.Context) error { return p.Close() })
	s.proxy = p
	s.env = flownetProxyEnv(p, bundle)
	return s.env, nil
}
