package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/harness/faultproxy"
	"github.com/ksqlflow/flowtest/harness/scenario"
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
	ca, bundle, err := scenarioCA(sc)
	if err != nil {
		return nil, err
	}
	t := sc.suite.Target
	p, err := faultproxy.New(faultproxy.Options{Name: "flownet-count", Upstream: t.BaseURL, UpstreamCA: t.CAFile,
		TLS: strings.HasPrefix(t.BaseURL, "https:"), CA: ca, LogDir: dir, Counter: sc.st.API})
	if err != nil {
		return nil, fmt.Errorf("FlowNet's counting proxy: %w", err)
	}
	sc.st.Defer("close FlowNet's counting proxy", func(context.Context) error { return p.Close() })
	s.proxy = p
	s.env = []string{"KSQL_FLOWNET_BASE_URL=" + p.URL()}
	if p.CAFile() != "" {
		s.env = append(s.env, "SSL_CERT_FILE="+bundle, "NODE_EXTRA_CA_CERTS="+bundle)
	}
	return s.env, nil
}
