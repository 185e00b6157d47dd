package preflight

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/ksqlprofile"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// The preflight learns the operator's kSQL-Flow profile as the contract offers it,
// `describe-profile --json` (product-contract §7), and proves with the real kSQL-Flow what the
// held windows and the CSV write fault do with it: a config copy that changes only the base
// URL, and a job whose first business read arrives at a proxy's barrier.

// ksqlFlowEnv is the part of the run's kSQL-Flow environment flowtest configures: the tokens
// its config may reference (target.KsqlFlowEnvNames) that are set.
func ksqlFlowEnv(cfg *config.Config) []string {
	var env []string
	for _, n := range target.KsqlFlowEnvNames(cfg.Get(safety.VarAppCSV) != "") {
		if v := cfg.Get(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// profileDescriber describes a profile of a kSQL-Flow config.
type profileDescriber func(config, profile string) (*ksqlprofile.Description, error)

// LiveDescriber runs the configured kSQL-Flow's describe-profile with the environment a run
// gives it, bounded and dying with the runner like every probe; one answer per config and
// profile per session (it reads a file and prints one line).
func LiveDescriber(cfg *config.Config) profileDescriber {
	seen := map[string]*ksqlprofile.Description{}
	return func(conf, profile string) (*ksqlprofile.Description, error) {
		if d := seen[conf+"\x00"+profile]; d != nil {
			return d, nil
		}
		l, err := ksqlFlowLauncher(cfg, "")
		if err != nil {
			return nil, err
		}
		d, err := ksqlprofile.Describe(context.Background(), l, profile, conf)
		if err != nil {
			return nil, err
		}
		seen[conf+"\x00"+profile] = d
		return d, nil
	}
}

// ksqlFlowLauncher is the configured kSQL-Flow with the run's environment (extraEnv last).
func ksqlFlowLauncher(cfg *config.Config, dir string, extraEnv ...string) (ksqlprofile.Launcher, error) {
	bin := cfg.Get(config.VarFlowBin)
	if bin == "" {
		return ksqlprofile.Launcher{}, fmt.Errorf("%s is not set: how is kSQL-Flow started?", config.VarFlowBin)
	}
	args, err := cfg.FlowBinArgs()
	if err != nil {
		return ksqlprofile.Launcher{}, err
	}
	env := append(append(target.ChildBaseEnv(cfg.Get(config.VarCAFile)), ksqlFlowEnv(cfg)...), extraEnv...)
	return ksqlprofile.Launcher{Path: bin, Args: args, Env: env, Dir: dir, Run: proc.RunBound}, nil
}

// probeReadWait bounds the wait for the probe job's first read to reach the barrier.
const probeReadWait = 30 * time.Second

// ksqlFlowProxyCheck proves with the operator's kSQL-Flow, before any scenario relies on it:
//   - a copy of its config whose profile's base URL is a proxy's, and nothing else changed
//     (the files differ in that key only), is described exactly as the original but for that
//     URL — the copy every scenario gives FlowNet for its kSQL-Flow children;
//   - a probe job (the n1_extract SQL of the validate fixture, reading 顧客管理) run with that
//     copy, trusting the proxy through NODE_EXTRA_CA_CERTS only, sends its first business
//     read as a records or cursor request naming the customers app, which a barrier holds
//     and releases, and the job then ends with exit 0;
//   - the profile's httpTimeoutMs leaves room for a hold (every hold is bounded below it).
//
// The job runs standalone with `--lock local-only`: it reads, and writes no JOB log row.
func ksqlFlowProxyCheck(cfg *config.Config, describe profileDescriber, api *apicount.Counter) safety.Check {
	c := safety.Check{Name: "ksql-flow-proxy", Subject: config.VarFlowConfig, OK: true}
	fail := func(format string, a ...any) safety.Check {
		c.OK, c.Reason = false, fmt.Sprintf(format, a...)
		return c
	}
	conf, profile := cfg.FlowConfig(), cfg.Profile()
	if conf == "" {
		return fail("not probed: %s is not set (ksql-flow-config)", config.VarFlowConfig)
	}
	orig, err := describe(conf, profile)
	if err != nil {
		return fail("not probed: %v", err)
	}
	bound, err := orig.HoldBound(time.Hour)
	if err != nil {
		return fail("%v", err)
	}
	customers := orig.Apps[target.LogicalCustomers]
	if customers == "" {
		return fail("not probed: describe-profile of %s reports no app %s", profile, target.LogicalCustomers)
	}
	tmp, err := os.MkdirTemp("", "flowtest-proxy-probe-")
	if err != nil {
		return fail("not probed: %v", err)
	}
	defer os.RemoveAll(tmp)

	baseURL := cfg.Get(safety.VarBaseURL)
	p, err := faultproxy.New(faultproxy.Options{Name: "preflight-ksql-flow", Upstream: baseURL, UpstreamCA: cfg.Get(config.VarCAFile),
		TLS: strings.HasPrefix(baseURL, "https:"), LogDir: tmp, BarrierTimeout: bound, Counter: api.From(apicount.KsqlFlow)})
	if err != nil {
		return fail("not probed: the proxy: %v", err)
	}
	defer p.Close()
	copyPath := filepath.Join(tmp, "ksql-flow-config.json")
	describeCopy := func(conf string) (*ksqlprofile.Description, error) { return describe(conf, profile) }
	if err := ksqlprofile.WriteProvenCopy(conf, copyPath, profile, p.URL(), orig, describeCopy); err != nil {
		return fail("%v", err)
	}

	sql, err := probeJobSQL(tmp)
	if err != nil {
		return fail("not probed: %v", err)
	}
	const barrierID = "preflight-first-read"
	if err := p.AddBarrier(faultproxy.Barrier{ID: barrierID, Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/records(/cursor)?\.json$`, App: customers}}); err != nil {
		return fail("not probed: %v", err)
	}
	trust, err := proxyTrust(p, cfg, tmp)
	if err != nil {
		return fail("not probed: %v", err)
	}
	l, err := ksqlFlowLauncher(cfg, tmp, trust...)
	if err != nil {
		return fail("not probed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), launcherProbeTimeout+bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.Path, append(append([]string(nil), l.Args...), "run", "-f", sql, "--profile", profile, "--config", copyPath, "--lock", "local-only", "--json")...)
	cmd.Env, cmd.Dir = l.Env, tmp
	arrival, arrErr, runErr, out := runHeldProbe(ctx, cmd, p, barrierID)
	if arrErr != nil {
		return fail("the probe job's first read of %s did not reach the proxy's barrier (a records or cursor request naming the app): %v; the job: %v %s", target.LogicalCustomers, arrErr, runErr, shortFirstLine(out))
	}
	if runErr != nil {
		return fail("the probe job through the proxy did not succeed after its held read was released: %v: %s", runErr, shortFirstLine(out))
	}
	c.Reason = fmt.Sprintf("a copy changing only %s is described alike; a probe job's first read (%s %s) was held and released, the job ended 0; holds bounded to %s (httpTimeoutMs %d)",
		ksqlprofile.DocumentedChange(profile), arrival.Method, arrival.Path, bound, orig.HTTPTimeoutMs)
	return c
}

// proxyTrust returns the environment that makes a kSQL-Flow child trust the proxy (when it
// serves TLS) and the tenant's own CA, through a CA bundle written into dir.
func proxyTrust(p *faultproxy.Proxy, cfg *config.Config, dir string) ([]string, error) {
	ca := p.CAFile()
	if ca == "" {
		return nil, nil
	}
	bundle := filepath.Join(dir, "ca-bundle.pem")
	files := []string{ca}
	if tenantCA := cfg.Get(config.VarCAFile); tenantCA != "" {
		files = append([]string{tenantCA}, files...)
	}
	if err := faultproxy.WriteCABundle(bundle, files...); err != nil {
		return nil, err
	}
	return []string{"NODE_EXTRA_CA_CERTS=" + bundle}, nil
}

// runHeldProbe runs the probe job cmd and releases its first read once it is held at the
// barrier; it returns that read (arrErr when none arrived), the job's error and its output.
func runHeldProbe(ctx context.Context, cmd *exec.Cmd, p *faultproxy.Proxy, barrierID string) (arrival faultproxy.Arrival, arrErr, runErr error, output string) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	go func() { done <- proc.RunBound(cmd) }()

	// The first read arrives, or the job ends without one (its read is held, so a job that
	// ends first sent none through the barrier), or the wait's bound passes.
	waitCtx, stopWait := context.WithTimeout(ctx, probeReadWait)
	type arrived struct {
		a   faultproxy.Arrival
		err error
	}
	arrivals := make(chan arrived, 1)
	go func() {
		a, err := p.WaitArrival(waitCtx, barrierID)
		arrivals <- arrived{a, err}
	}()
	var got arrived
	select {
	case got = <-arrivals:
		_ = p.Release(barrierID)
		runErr = <-done
	case runErr = <-done:
		stopWait()
		got = <-arrivals
		if got.err == nil {
			got.err = fmt.Errorf("the job ended before its read was released")
		}
	}
	stopWait()
	return got.a, got.err, runErr, out.String()
}

// probeJobSQL renders the validate fixture with a throw-away scope into dir and returns the
// SQL of its first node, n1_extract: a read of 顧客管理 into a temp table and an ASSERT.
func probeJobSQL(dir string) (string, error) {
	src := filepath.Join(dir, "fixtures")
	if err := writeProbeFixture(src); err != nil {
		return "", err
	}
	sc, err := scope.New("preflight_proxy", time.Now(), nil)
	if err != nil {
		return "", err
	}
	r, err := sc.Render(filepath.Join(src, "networks", validateFixture), filepath.Join(dir, "rendered"), scope.RenderOptions{})
	if err != nil {
		return "", fmt.Errorf("render %s: %w", validateFixture, err)
	}
	for _, n := range r.Nodes {
		if n.FixtureID == "n1_extract" {
			return n.SQL, nil
		}
	}
	return "", fmt.Errorf("%s has no node n1_extract", validateFixture)
}
