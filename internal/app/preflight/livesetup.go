// Package preflight holds flowtest's own preflight checks, which compose safety's pure rules
// with I/O: the rules of the scenarios' declared needs (a confirmer, the CSV IO directory, the
// CSV fixture app), and, live, the setup probes (the tenant over TLS, the tokens'
// permissions, another runner at work, the launchers and their validation of a rendered
// fixture, the kSQL-Flow config). Each returns a safety.Check; none decides an exit code.
package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// Bounds of the live setup probes: a tenant or launcher that does not answer within them is
// refused, so preflight never hangs on a missing CA or a wedged launcher.
const (
	tenantProbeTimeout   = 10 * time.Second
	launcherProbeTimeout = 30 * time.Second
)

// LiveSetupChecks prove, read-only, that the live setup can work before anything starts:
// the tenant answers over TLS with the configured CA, the FlowNet and kSQL-Flow launchers
// exist and answer, and the kSQL-Flow config agrees with flowtest's configuration (profile
// base URL origin, log app, business apps, and every env:NAME it references is a variable
// flowtest passes to the kSQL-Flow child). Nothing is written: the tenant gets one GET of its
// base URL, the write-free token probes and reads of the state and audit apps. Sandbox: none
// (the runner makes the whole setup).
//
// The launchers also validate a fixture rendered with a throw-away scope into a temporary
// directory (flownet-validate, ksql-flow-validate: launchervalidate.go), and the state and
// audit apps are read for another runner at work (tenant-activity: activity.go).
func LiveSetupChecks(cfg *config.Config, api *apicount.Counter) []safety.Check {
	tls := tenantTLSCheck(cfg.Get(safety.VarBaseURL), cfg.Get(config.VarCAFile))
	tokens := safety.Check{Name: "token-permissions", Subject: "tokens", OK: false,
		Reason: "not probed: the tenant does not answer over TLS"}
	active := safety.Check{Name: "tenant-activity", Subject: "state and audit apps", OK: false,
		Reason: "not probed: the tenant does not answer over TLS"}
	if tls.OK {
		tokens = tokenPermissionCheck(cfg, api)
		active = tenantActivityCheck(cfg, time.Now(), api)
	}
	fn, kf := flowNetLauncherCheck(cfg), ksqlFlowLauncherCheck(cfg)
	checks := []safety.Check{tls, tokens, active, fn, kf}
	checks = append(checks, validateChecks(cfg, fn.OK, kf.OK)...)
	describe := LiveDescriber(cfg)
	conf := ksqlFlowConfigCheck(cfg, describe, os.ReadFile)
	proxy := safety.Check{Name: "ksql-flow-proxy", Subject: config.VarFlowConfig, OK: false}
	switch {
	case !kf.OK:
		proxy.Reason = "not probed: kSQL-Flow does not answer (ksql-flow-launcher)"
	case !tls.OK:
		proxy.Reason = "not probed: the tenant does not answer over TLS"
	case !conf.OK:
		proxy.Reason = "not probed: the kSQL-Flow config is refused (ksql-flow-config)"
	default:
		proxy = ksqlFlowProxyCheck(cfg, describe, api)
	}
	return append(checks, conf, proxy)
}

// tokenRole is what one token variable is used for and the permissions that use needs;
// read-only tokens must also lack every write permission.
type tokenRole struct {
	Var, Role string
	Needs     []string
	ReadOnly  bool
}

// tokenRoles lists the configured token variables with their roles: FlowNet's writer tokens
// (view/add/edit; with delete too when no cleanup token is set, because the harness then
// sweeps with them), the harness's cleanup tokens (view/delete), kSQL-Flow's JOB log token
// (view/add/edit), the request poller's token (view/edit, product-contract §4.3; with add
// and delete too when no request cleanup token is set), the harness's request token and the
// CSV token (view/add/edit/delete: the harness creates, withdraws and sweeps with them), and
// the read-only tokens (view, nothing else).
func tokenRoles(cfg *config.Config) []tokenRole {
	v, a, e, d := kintoneapi.PermView, kintoneapi.PermAdd, kintoneapi.PermEdit, kintoneapi.PermDelete
	// shared is what a product token needs: its own permissions, or, when the harness has
	// no cleanup token of its own for that app, also what the harness does with it.
	shared := func(cleanupVar string, own, harness []string, what string) ([]string, string) {
		if cfg.Get(cleanupVar) == "" {
			return harness, " and the harness's " + what + ": " + cleanupVar + " is unset"
		}
		return own, ""
	}
	execNeeds, execAlso := shared(safety.VarTokenExecCleanup, []string{v, a, e}, []string{v, a, e, d}, "sweep")
	auditNeeds, auditAlso := shared(safety.VarTokenAuditCleanup, []string{v, a, e}, []string{v, a, e, d}, "sweep")
	reqNeeds, reqAlso := shared(safety.VarTokenRequestsCleanup, []string{v, e}, []string{v, a, e, d}, "requests and sweep")
	all := []tokenRole{
		{safety.VarTokenExec, "FlowNet's state writer" + execAlso, execNeeds, false},
		{safety.VarTokenAudit, "FlowNet's audit writer" + auditAlso, auditNeeds, false},
		{safety.VarTokenExecCleanup, "the harness's state cleanup", []string{v, d}, false},
		{safety.VarTokenAuditCleanup, "the harness's audit cleanup", []string{v, d}, false},
		{safety.VarTokenLogs, "kSQL-Flow's JOB log writer", []string{v, a, e}, false},
		{safety.VarTokenRequests, "FlowNet's request poller" + reqAlso, reqNeeds, false},
		{safety.VarTokenRequestsCleanup, "the harness's request writer and cleanup", []string{v, a, e, d}, false},
		{safety.VarTokenCSV, "the CSV fixture writer", []string{v, a, e, d}, false},
	}
	for _, t := range safety.TokenCatalog() {
		if !t.Writable {
			all = append(all, tokenRole{t.Name, "read-only", []string{v}, true})
		}
	}
	var out []tokenRole
	for _, t := range all {
		if cfg.Get(t.Var) != "" {
			out = append(out, t)
		}
	}
	return out
}

// tokenPermissionCheck probes every configured token, writing nothing
// (kintoneapi.ProbePermission), and refuses a token that lacks a permission its role needs,
// or a read-only token that can write, naming the variable, its role and the permission.
func tokenPermissionCheck(cfg *config.Config, api *apicount.Counter) safety.Check {
	c := safety.Check{Name: "token-permissions", Subject: "tokens", OK: true}
	hc, err := TenantHTTP(cfg.Get(config.VarCAFile), api)
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	hc.Timeout = tenantProbeTimeout
	appOf := map[string]string{}
	for _, sp := range safety.TokenCatalog() {
		if a, ok := cfg.LiveApps()[sp.Role]; ok {
			appOf[sp.Name] = a.ID
		}
	}
	var problems []string
	n := 0
	for _, t := range tokenRoles(cfg) {
		app := appOf[t.Var]
		if app == "" {
			continue // no app id: the app checks report it
		}
		probe := t.Needs
		if t.ReadOnly {
			probe = []string{kintoneapi.PermView, kintoneapi.PermAdd, kintoneapi.PermEdit, kintoneapi.PermDelete}
		}
		for _, p := range probe {
			ctx, cancel := context.WithTimeout(context.Background(), tenantProbeTimeout)
			has, err := kintoneapi.ProbePermission(ctx, hc, cfg.Get(safety.VarBaseURL), app, cfg.Get(t.Var), p)
			cancel()
			n++
			want := slices.Contains(t.Needs, p)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s (%s): probing %s: %v", t.Var, t.Role, p, err))
			case want && !has:
				problems = append(problems, fmt.Sprintf("%s (%s) lacks the %s permission", t.Var, t.Role, p))
			case !want && has && t.ReadOnly:
				problems = append(problems, fmt.Sprintf("%s (%s) has the %s permission: a read-only token must be view-only", t.Var, t.Role, p))
			}
			if err != nil {
				break
			}
		}
	}
	if len(problems) > 0 {
		c.OK, c.Reason = false, strings.Join(problems, "; ")
		return c
	}
	c.Reason = fmt.Sprintf("%d probes (nothing written): every token has what its role needs, read-only tokens only view", n)
	return c
}

// tenantTLSCheck sends one GET to the base URL with the configured CA and a bounded timeout:
// any HTTP answer proves the TLS set-up (the status does not matter); a TLS, DNS or connect
// error, or no answer in time, is refused with the cause.
func tenantTLSCheck(baseURL, caFile string) safety.Check {
	c := safety.Check{Name: "tenant-tls", Subject: safety.VarBaseURL, OK: true}
	if strings.TrimSpace(baseURL) == "" {
		c.OK, c.Reason = false, safety.VarBaseURL+" is not set"
		return c
	}
	if caFile != "" {
		if _, err := os.Stat(caFile); err != nil {
			c.OK, c.Reason = false, fmt.Sprintf("%s %s: %v", config.VarCAFile, caFile, err)
			return c
		}
	}
	hc, err := kintoneapi.HTTPClientWithCA(caFile)
	if err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("%s: %v", config.VarCAFile, err)
		return c
	}
	hc.Timeout = tenantProbeTimeout
	ctx, cancel := context.WithTimeout(context.Background(), tenantProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL, nil)
	if err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("base URL: %v", err)
		return c
	}
	resp, err := hc.Do(req)
	if err != nil {
		hint := ""
		if strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "certificate") {
			hint = fmt.Sprintf(" (is %s the PEM CA of the tenant's certificate?)", config.VarCAFile)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			hint = fmt.Sprintf(" (no answer within %s)", tenantProbeTimeout)
		}
		c.OK, c.Reason = false, fmt.Sprintf("the tenant does not answer over TLS: %v%s", err, hint)
		return c
	}
	resp.Body.Close()
	ca := "system roots"
	if caFile != "" {
		ca = "CA " + caFile
	}
	c.Reason = fmt.Sprintf("answered over TLS (%s), HTTP %d", ca, resp.StatusCode)
	return c
}

// probe runs a launcher with args, a minimal environment (plus extraEnv) and a bounded time,
// and returns its stdout; the error carries the exit and stderr tail.
func probe(bin string, args []string, dir string, caFile string, extraEnv ...string) ([]byte, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: not found or not executable: %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), launcherProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = append(target.ChildBaseEnv(caFile), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	if err := proc.RunBound(cmd); err != nil { // dies with the runner, like every child
		if ctx.Err() != nil {
			return nil, fmt.Errorf("`%s %s` did not answer within %s", bin, strings.Join(args, " "), launcherProbeTimeout)
		}
		tail := strings.TrimSpace(errb.String())
		if len(tail) > 300 {
			tail = tail[len(tail)-300:]
		}
		return nil, fmt.Errorf("`%s %s`: %v: %s", bin, strings.Join(args, " "), err, tail)
	}
	return out.Bytes(), nil
}

// flowNetLauncherCheck starts the FlowNet CLI with --version (product contract: prints the
// package version, exit 0; no config, no network).
func flowNetLauncherCheck(cfg *config.Config) safety.Check {
	c := safety.Check{Name: "flownet-launcher", Subject: config.VarFlowNetDir, OK: true}
	bin, args, dir, err := cfg.FlowNetCommand()
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			c.OK, c.Reason = false, fmt.Sprintf("%s %s is not a directory", config.VarFlowNetDir, dir)
			return c
		}
	}
	out, err := probe(bin, append(args, "--version"), dir, cfg.Get(config.VarCAFile))
	if err != nil {
		c.OK, c.Reason = false, "the FlowNet CLI does not answer: "+err.Error()
		return c
	}
	c.Reason = "answers --version: " + shortFirstLine(string(out))
	return c
}

// ksqlFlowLauncherCheck starts kSQL-Flow with `capabilities --json` (no config, no network)
// and requires the execution contract FlowNet speaks.
func ksqlFlowLauncherCheck(cfg *config.Config) safety.Check {
	c := safety.Check{Name: "ksql-flow-launcher", Subject: config.VarFlowBin, OK: true}
	bin := cfg.Get(config.VarFlowBin)
	if bin == "" {
		c.OK, c.Reason = false, config.VarFlowBin+" is not set: how is kSQL-Flow started?"
		return c
	}
	args, err := cfg.FlowBinArgs()
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	out, err := probe(bin, append(args, "capabilities", "--json"), "", cfg.Get(config.VarCAFile))
	if err != nil {
		c.OK, c.Reason = false, "kSQL-Flow does not answer: "+err.Error()
		return c
	}
	var caps struct {
		Kind      string   `json:"kind"`
		Contracts []string `json:"executionContracts"`
		Version   string   `json:"ksqlFlowVersion"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &caps); err != nil || caps.Kind != "CAPABILITIES" {
		c.OK, c.Reason = false, fmt.Sprintf("`capabilities --json` did not print a CAPABILITIES document: %q", shortFirstLine(string(out)))
		return c
	}
	if !slices.Contains(caps.Contracts, "ksql-flow.execution/v1") {
		c.OK, c.Reason = false, fmt.Sprintf("kSQL-Flow does not offer ksql-flow.execution/v1 (offers %v)", caps.Contracts)
		return c
	}
	c.Reason = "capabilities: ksql-flow.execution/v1, version " + caps.Version
	return c
}

// shortFirstLine is the first line of trimmed s, cut to 120 bytes: a launcher's output as
// one short reason.
func shortFirstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 120 {
		l = l[:120]
	}
	return l
}

var envRefRE = regexp.MustCompile(`^env:(.*)$`)

// ksqlFlowConfigCheck learns the profile from describe-profile (product-contract §7) and
// refuses it unless its base URL has the tenant's origin, its log app is the E2E log app and
// its business apps are the configured ones. The config file itself is read for one thing
// describe-profile never shows, the token sources: every env:NAME it references must be a
// variable flowtest passes to the kSQL-Flow child (target.KsqlFlowEnvNames) — another name
// would be unset in the child and fail only inside the first run. A file that is not JSON
// leaves that part unchecked (its format is kSQL-Flow's, not the contract's), and says so.
func ksqlFlowConfigCheck(cfg *config.Config, describe profileDescriber, read func(string) ([]byte, error)) safety.Check {
	c := safety.Check{Name: "ksql-flow-config", Subject: config.VarFlowConfig, OK: true}
	path := cfg.FlowConfig()
	if path == "" {
		c.OK, c.Reason = false, config.VarFlowConfig+" is not set"
		return c
	}
	if data, err := read(path); err == nil {
		if fp := configFormatProblems(data, cfg.Profile()); len(fp) > 0 {
			c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config %s, profile %q is not in the kSQL-Flow 0.9.0 format (docs/live.md, set-up step 3): %s",
				path, cfg.Profile(), strings.Join(fp, "; "))
			return c
		}
	}
	// The env: references come first: kSQL-Flow 0.9.0 resolves every one when it loads the
	// config (config.js resolveEnvRef), so describe-profile itself fails on an unset one.
	refs, refsNote := configEnvRefs(path, cfg.Profile(), read)
	passed := target.KsqlFlowEnvNames(cfg.Get(safety.VarAppCSV) != "")
	var bad []string
	for _, r := range refs {
		if !slices.Contains(passed, r) {
			bad = append(bad, "env:"+r)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		bad = slices.Compact(bad)
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config %s, profile %q: references %s, which flowtest does not pass to kSQL-Flow (it passes %s)",
			path, cfg.Profile(), strings.Join(bad, ", "), strings.Join(passed, ", "))
		return c
	}
	d, err := describe(path, cfg.Profile())
	if err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config %s, profile %q: %v", path, cfg.Profile(), err)
		return c
	}
	var problems []string
	if o1, o2 := origin(d.BaseURL), origin(cfg.Get(safety.VarBaseURL)); o1 == "" || o1 != o2 {
		problems = append(problems, fmt.Sprintf("profile baseUrl origin %q is not the tenant's (%s origin %q)", o1, safety.VarBaseURL, o2))
	}
	if d.LogAppID != cfg.Get(safety.VarAppLog) {
		problems = append(problems, fmt.Sprintf("logApp.appId is not %s", safety.VarAppLog))
	}
	for _, b := range []struct{ logical, v string }{{target.LogicalCustomers, safety.VarAppCust}, {target.LogicalDeals, safety.VarAppDeals}} {
		id, ok := d.Apps[b.logical]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("apps has no %s", b.logical))
		case id != cfg.Get(b.v):
			problems = append(problems, fmt.Sprintf("apps.%s.id is not %s", b.logical, b.v))
		}
	}
	if len(problems) > 0 {
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config %s, profile %q: %s", path, cfg.Profile(), strings.Join(problems, "; "))
		return c
	}
	c.Reason = fmt.Sprintf("profile %q (describe-profile): tenant origin, E2E log app, business apps; %s", cfg.Profile(), refsNote)
	return c
}

// maxReadRowsCap is the real kSQL-Flow 0.9.0's cap of limits.maxReadRows (config.js
// resolveLimits: 1〜200000).
const maxReadRowsCap = 200000

// configFormatProblems names what in the profile (and the file's shared sections) the real
// kSQL-Flow 0.9.0 loader refuses or flowtest cannot work with, in the words an operator
// fixes it by: the pre-0.9.0 sandbox format (formatVersion, apps.<n>.appId/token, logApp
// as an object, caFile), a limits key the loader does not know or maxReadRows over its cap,
// and a literal token (flowtest passes every token to kSQL-Flow through an env:NAME it
// checks; a literal would bypass that). A file that is not JSON is left to describe-profile.
func configFormatProblems(data []byte, profile string) []string {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	var out []string
	if _, ok := doc["formatVersion"]; ok {
		out = append(out, "formatVersion: the real config has no such key (its loader refuses it)")
	}
	profiles, _ := doc["profiles"].(map[string]any)
	prof, _ := profiles[profile].(map[string]any)
	if prof == nil {
		return out
	}
	if _, ok := prof["caFile"]; ok {
		out = append(out, "caFile: not a kSQL-Flow key (the CA reaches kSQL-Flow through "+config.VarCAFile+", as NODE_EXTRA_CA_CERTS)")
	}
	apps, _ := prof["apps"].(map[string]any)
	names := make([]string, 0, len(apps))
	for n := range apps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a, _ := apps[n].(map[string]any)
		if _, old := a["appId"]; old {
			out = append(out, fmt.Sprintf(`apps.%s: write {"id": <integer>, "tokens": ["env:NAME"]}, not appId/token`, n))
			continue
		}
		if id, ok := a["id"].(json.Number); !ok || !positiveInt(id) {
			out = append(out, fmt.Sprintf("apps.%s.id must be a positive JSON integer", n))
		}
		toks, _ := a["tokens"].([]any)
		for i, t := range toks {
			if s, _ := t.(string); !envRefRE.MatchString(s) {
				out = append(out, fmt.Sprintf("apps.%s.tokens[%d] is a literal token: write env:NAME", n, i))
			}
		}
	}
	if la, ok := prof["logApp"]; ok {
		if name, isStr := la.(string); !isStr {
			out = append(out, `logApp: write the logical name of its apps entry ("logApp": "JOB_LOG"), not an object`)
		} else if _, in := apps[name]; !in {
			out = append(out, fmt.Sprintf("logApp %q is not an entry of apps", name))
		}
	}
	for _, lim := range []struct {
		where string
		v     any
	}{{"limits", doc["limits"]}, {"profiles." + profile + ".limits", prof["limits"]}} {
		m, _ := lim.v.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m[k]
			switch k {
			case "maxApiCalls", "maxTempRows", "batchTimeoutSec":
			case "maxReadRows":
				if n, ok := v.(json.Number); ok && positiveInt(n) {
					if i, _ := n.Int64(); i > maxReadRowsCap {
						out = append(out, fmt.Sprintf("%s.maxReadRows %s is over the real loader's cap of %d", lim.where, n, maxReadRowsCap))
					}
				}
			default:
				out = append(out, fmt.Sprintf("%s.%s: the real loader knows no such limit", lim.where, k))
			}
		}
	}
	return out
}

func positiveInt(n json.Number) bool {
	i, err := n.Int64()
	return err == nil && i > 0
}

// configEnvRefs are the env:NAME references of the profile in the config file, and what to
// say about them: how many were found, or why none could be read (not JSON: unchecked).
func configEnvRefs(path, profile string, read func(string) ([]byte, error)) ([]string, string) {
	data, err := read(path)
	if err != nil {
		return nil, fmt.Sprintf("env: references unchecked (read the config: %v)", err)
	}
	var doc struct {
		Profiles map[string]json.RawMessage `json:"profiles"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Profiles[profile] == nil {
		return nil, "env: references unchecked (the config file is not JSON with that profile)"
	}
	var refs []string
	collectEnvRefs(doc.Profiles[profile], &refs)
	return refs, fmt.Sprintf("%d env: references all passed", len(refs))
}

func origin(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// collectEnvRefs finds every string value "env:NAME" anywhere in a JSON document.
func collectEnvRefs(raw json.RawMessage, out *[]string) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if m := envRefRE.FindStringSubmatch(x); m != nil {
				*out = append(*out, m[1])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}
