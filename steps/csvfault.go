package steps

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/harness/apicount"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/kintoneapi"
)

// csvFaultDomain: the CSV write fault of csv1-02 (scenarios.md §2.8.3): the original hooked the kSQL-Flow
// child's HTTP client so that its 2nd POST/PUT of records to the CSV fixture app answered a
// synthetic HTTP 400 (CSV1_FAULT). Here the child's kintone traffic goes through a small
// TLS proxy instead: the scope gets a copy of the kSQL-Flow config whose baseUrl is the
// proxy (nothing else changes; describe-profile proves it), given to FlowNet as
// KSQL_FLOW_CONFIG for every run of the scope — the profile snapshot stays the same across
// the failing run and its resume. The child trusts the proxy by a CA bundle in
// NODE_EXTRA_CA_CERTS, which the Node kSQL-Flow and the sandbox one both read. The
// proxy answers the 2nd records write to the CSV app with 400 once and passes everything
// else unchanged. FlowNet's own traffic does not pass through it.
//
// (harness/faultproxy is the proxy of FlowNet's traffic, with modes and barriers; this
// one-shot write fault stays here until that package grows a "fail the n-th write" rule.)
type csvFaultDomain struct{}

func (d csvFaultDomain) register(reg stepdef.Registry) {
	reg.Step(`^the kSQL-Flow child's kintone traffic goes through a proxy that answers its (\d+)(?:st|nd|rd|th) records write to the CSV fixture app with HTTP 400 once$`, d.writeFaultProxy)
	reg.Step(`^the write-fault proxy answered (\d+) synthetic HTTP 400s?$`, d.proxyFaulted)
}

// csvFaultState is the write-fault proxy of each scope that has one.
type csvFaultState struct {
	proxies map[string]*csvFaultProxy // scope id -> its kSQL-Flow write-fault proxy
}

var csvFaultKey = scenario.NewKey[csvFaultState]("csv-fault")

// env is the kSQL-Flow config copy and CA bundle of the scope's write-fault proxy, for
// FlowNet (whose kSQL-Flow children inherit them); nil when the scope has none.
func (s *csvFaultState) env(scopeID string) []string {
	p := s.proxies[scopeID]
	if p == nil {
		return nil
	}
	return []string{"KSQL_FLOW_CONFIG=" + p.config, "NODE_EXTRA_CA_CERTS=" + p.caBundle}
}

// csvFaultProxy is the running proxy of one scope.
type csvFaultProxy struct {
	srv      *http.Server
	config   string // the kSQL-Flow config copy pointing at the proxy
	caBundle string // the tenant's CA (if any) and the proxy's, for the child's CA variables

	mu       sync.Mutex
	writes   int
	faulted  int
	failNth  int
	csvApp   string
	faultLog []string
}

func (csvFaultDomain) writeFaultProxy(ctx context.Context, nth int) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvFaultKey.Of(sc.st)
	if s.proxies == nil {
		s.proxies = map[string]*csvFaultProxy{}
	}
	if s.proxies[fx.scope().ID()] != nil {
		return fmt.Errorf("the scope already has a write-fault proxy")
	}
	t := sc.suite.Target
	up, err := url.Parse(t.BaseURL)
	if err != nil {
		return err
	}
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return err
	}
	// The proxy's certificate is signed by the scenario's one proxy CA (scenarioCA), so the
	// child trusts it through the scenario's one bundle (the tenant's CA and that CA) in
	// NODE_EXTRA_CA_CERTS of FlowNet's environment, which kSQL-Flow inherits — the variable the
	// Node runtimes read, so the config copy changes nothing but its base URL. A CA of its own
	// would lose to the bundle of FlowNet's fault or counting proxy: a child sees one value.
	ca, bundle, err := scenarioCA(sc)
	if err != nil {
		return err
	}
	cert, err := ca.ServerCert()
	if err != nil {
		return err
	}
	dir := filepath.Join(sc.st.WorkDir, "csv-fault-"+fx.scope().Hash8())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := &csvFaultProxy{failNth: nth, csvApp: t.Apps[target.RoleCSV].ID, caBundle: bundle}
	// SetURL also sets the Host header to the tenant's: a real tenant is virtual-hosted.
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(up) }, Transport: apicount.Transport(hc.Transport, sc.st.API, tokensByApp(t))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.fault(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":"CSV1_FAULT","id":"csv1-02","message":"synthetic write fault"}`))
			return
		}
		rp.ServeHTTP(w, r)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	proxyURL := "https://" + ln.Addr().String()

	orig, err := describeProfile(ctx, sc, t.KsqlFlowConfig)
	if err != nil {
		_ = p.srv.Close()
		return err
	}
	if p.config, err = proxiedConfig(ctx, sc, orig, dir, proxyURL); err != nil {
		_ = p.srv.Close()
		return err
	}
	s.proxies[fx.scope().ID()] = p
	sc.st.Note("kSQL-Flow write fault", fmt.Sprintf("the kSQL-Flow child's records write #%d to the CSV fixture app answers HTTP 400 CSV1_FAULT once (proxy %s)", nth, proxyURL))
	sc.st.Defer("stop the kSQL-Flow write-fault proxy", func(context.Context) error { return p.srv.Close() })
	return nil
}

// fault decides (and counts) one request: POST/PUT of records of the CSV app.
func (p *csvFaultProxy) fault(r *http.Request) bool {
	if (r.Method != http.MethodPost && r.Method != http.MethodPut) || !(strings.HasSuffix(r.URL.Path, "/k/v1/records.json") || strings.HasSuffix(r.URL.Path, "/k/v1/record.json")) {
		return false
	}
	if strings.EqualFold(r.Header.Get("X-HTTP-Method-Override"), http.MethodGet) {
		return false // a long query sent as POST is a read, not a write
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var head struct {
		App json.RawMessage `json:"app"`
	}
	_ = json.Unmarshal(body, &head)
	if strings.Trim(string(head.App), `"`) != p.csvApp {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	if p.writes == p.failNth && p.faulted == 0 {
		p.faulted++
		return true
	}
	return false
}

// faultedWrites says how many synthetic 400s the scope's proxy answered.
func (csvFaultDomain) proxyFaulted(ctx context.Context, n int) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	p := csvFaultKey.Of(sc.st).proxies[fx.scope().ID()]
	if p == nil {
		return errors.New("the scope has no write-fault proxy")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return sc.st.Equal("synthetic HTTP 400 answers of the write-fault proxy", n, p.faulted)
}
