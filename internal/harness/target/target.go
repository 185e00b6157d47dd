// Package target resolves, once per run, everything that differs between the sandbox and a
// live tenant: the kintone base URL and CA, the apps and their tokens, how to start the
// FlowNet CLI and kSQL-Flow, and the environment their children get. Step definitions never
// ask which target they run on; they ask the Target.
package target

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// Roles of the kintone apps a run uses.
const (
	RoleState     = "state"
	RoleAudit     = "audit"
	RoleRequest   = "request"
	RoleLog       = "log"
	RoleCustomers = "customers"
	RoleDeals     = "deals"
	RoleCSV       = "csv"
)

// App is one kintone app of the target.
type App struct {
	Role string `json:"role"`
	Name string `json:"name"`
	ID   string `json:"id"`
	// Tokens by kind: "full" (the harness writes and sweeps with it), "read" (view only), and
	// where the product's token is narrower, "flownet" (state, audit: view/add/edit),
	// "poller" (request: view/edit), "ksqlflow" (JOB log: view/add/edit).
	Tokens map[string]string `json:"tokens"`
}

// Command is how to start a program: argv[0] and leading arguments.
type Command struct {
	Path string
	Args []string
	Dir  string // working directory ("" = the scenario's choice)
}

// With returns argv for this command followed by args.
func (c Command) With(args ...string) (string, []string) {
	return c.Path, append(append([]string(nil), c.Args...), args...)
}

// Target is the resolved system under test.
type Target struct {
	Name    string // "sandbox" or "live"
	Profile string
	BaseURL string
	CAFile  string // PEM the children must trust ("" = system roots)
	Apps    map[string]App

	FlowNet        Command // the FlowNet CLI (sandbox: flowsandbox flownet)
	KsqlFlow       Command // kSQL-Flow (sandbox: flowsandbox ksql-flow)
	KsqlFlowConfig string  // kSQL-Flow config file for Profile
	// IODir is the base of the CSV series' per-scope IO roots: a live tenant's
	// KSQL_FLOWNET_IO_DIR (its preflight requires one for csv-io scenarios); empty on the
	// sandbox, where each scenario's work dir holds its roots.
	IODir string
	// BaseEnv is what every child gets before its role-specific variables: PATH, HOME,
	// locale, temp dir and the CA variables. Nothing else of the runner's environment.
	BaseEnv []string

	// Versions the SUT reports (for the acceptance record).
	Versions map[string]string
	// Product is the FlowNet the scenarios drive; on a live tenant, the one FlowNetCommand
	// names (always the real product or a build of it).
	Product Product

	closers []func() error
	aborts  []func()
}

// Abort kills what the target started, at once (the runner is exiting on a second interrupt
// and cannot wait for a graceful stop).
func (t *Target) Abort() {
	for _, a := range t.aborts {
		a()
	}
}

// Token returns the app's first token of the given kinds ("" if none). The sandbox mints a
// token per permission set (e.g. "flownet" = view/add/edit, "full" = with delete); a live
// tenant configures "full" and "read", plus "flownet" / "poller" when the operator set a
// separate cleanup token for the harness, so callers name the narrowest kind first.
func (a App) Token(kinds ...string) string {
	for _, k := range kinds {
		if t := a.Tokens[k]; t != "" {
			return t
		}
	}
	return ""
}

// App returns the app with role or an error naming the role.
func (t *Target) App(role string) (App, error) {
	a, ok := t.Apps[role]
	if !ok || a.ID == "" {
		return App{}, fmt.Errorf("target %s has no %s app configured", t.Name, role)
	}
	return a, nil
}

// ReadClient returns a kintone client that reads the given roles with their read-only tokens.
// The harness never needs more for reading; writes go through internal/harness/kintoneguard's guard.
func (t *Target) ReadClient(roles ...string) (*kintoneapi.Client, error) {
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	for _, r := range roles {
		a, err := t.App(r)
		if err != nil {
			return nil, err
		}
		tok := a.Tokens["read"]
		if tok == "" {
			return nil, fmt.Errorf("target %s: %s app has no read-only token", t.Name, r)
		}
		tokens[a.ID] = tok
	}
	return kintoneapi.New(t.BaseURL, hc, tokens), nil
}

// Secrets returns every token of the target by a variable-like name, for redaction.
func (t *Target) Secrets() map[string]string {
	out := map[string]string{}
	for role, a := range t.Apps {
		for kind, tok := range a.Tokens {
			if tok != "" {
				out[strings.ToUpper("SANDBOX_TOKEN_"+role+"_"+kind)] = tok
			}
		}
	}
	return out
}

// AppRoles maps app id → role, for redaction.
func (t *Target) AppRoles() map[string]string {
	out := map[string]string{}
	for role, a := range t.Apps {
		if a.ID != "" {
			out[a.ID] = role
		}
	}
	return out
}

// Close stops what the target started (the sandbox emulator).
func (t *Target) Close() error {
	var first error
	for i := len(t.closers) - 1; i >= 0; i-- {
		if err := t.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	t.closers = nil
	return first
}

// FindSandboxBinary finds flowsandbox: explicit path, else beside the running executable,
// else on PATH. The error says how to build it.
func FindSandboxBinary(explicit string) (string, error) {
	name := "flowsandbox"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if explicit != "" {
		if st, err := os.Stat(explicit); err != nil || st.IsDir() {
			return "", fmt.Errorf("--sandbox-bin %s: not an executable file (build it with `make build` or `go build -o bin/ ./cmd/flowsandbox`)", explicit)
		}
		return filepath.Abs(explicit)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("the sandbox needs the flowsandbox binary, found neither beside flowtest nor on PATH: build both with `make build` (they land in bin/), or pass --sandbox-bin <path>")
}

// ChildBaseEnv is the minimal environment children need to start and find their tools.
func ChildBaseEnv(caFile string) []string {
	env := proc.PlatformEnv()
	if caFile != "" {
		env = append(env, "SSL_CERT_FILE="+caFile, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	return env
}

// SandboxOptions configure the sandbox emulator.
type SandboxOptions struct {
	Bin     string // flowsandbox binary
	WorkDir string // run-level work dir (emulator data, kSQL-Flow config, logs)
	Profile string
	// Latency per app role, e.g. customers/deals reads take real time for long-read jobs.
	Latency map[string]time.Duration
	Log     io.Writer
	// Product is the FlowNet the scenarios drive (the zero value: the reference).
	Product Product
}

// serveInfo is the first stdout line of `flowsandbox kintone serve`.
type serveInfo struct {
	BaseURL string `json:"base_url"`
	CAFile  string `json:"ca_file"`
	Apps    []App  `json:"apps"`
}

// StartSandbox starts the kintone emulator as a child process, reads where it listens and
// which apps and tokens it made, and writes the kSQL-Flow config for the profile.
func StartSandbox(ctx context.Context, o SandboxOptions) (*Target, error) {
	if o.Profile == "" {
		o.Profile = "e2e"
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox work dir: %w", err)
	}
	// --exit-on-stdin-eof with ParentPipe: the emulator ends with the runner, even a killed one.
	args := []string{"kintone", "serve", "--exit-on-stdin-eof", "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(o.WorkDir, "kintone-data")}
	roles := make([]string, 0, len(o.Latency))
	for r := range o.Latency {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		args = append(args, "--latency", fmt.Sprintf("%s=%s", r, o.Latency[r]))
	}
	p, err := proc.Start(ctx, proc.Spec{
		Name: "kintone-emulator", Path: o.Bin, Args: args,
		// Its temporary files (the TLS key and certificates) go inside the run's work dir, so
		// that a killed run's are removed with it (internal/harness/workdir).
		Env: append(proc.PlatformEnv(), "TMPDIR="+o.WorkDir, "TMP="+o.WorkDir, "TEMP="+o.WorkDir),
		Dir: o.WorkDir, LogDir: o.WorkDir, ParentPipe: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start the sandbox kintone emulator: %w", err)
	}
	info, err := readServeInfo(ctx, p)
	if err != nil {
		p.KillTree()
		return nil, err
	}
	t := &Target{
		Name: "sandbox", Profile: o.Profile, BaseURL: info.BaseURL, CAFile: info.CAFile,
		Apps:     map[string]App{},
		FlowNet:  o.Product.Command(o.Bin),
		KsqlFlow: Command{Path: o.Bin, Args: []string{"ksql-flow"}},
		BaseEnv:  ChildBaseEnv(info.CAFile),
		Versions: map[string]string{"flowsandbox": "sandbox"},
		Product:  o.Product,
	}
	if o.Product.Real {
		t.Versions[o.Product.Package] = o.Product.Version
		t.Versions["node"] = o.Product.NodeVersion
	}
	for _, a := range info.Apps {
		t.Apps[a.Role] = a
	}
	t.aborts = append(t.aborts, func() { p.KillTree() })
	t.closers = append(t.closers, func() error {
		// The emulator saves its data dir on a graceful stop, so a person can inspect it.
		if _, err := p.Stop(10 * time.Second); err != nil {
			return fmt.Errorf("stop the kintone emulator: %w", err)
		}
		return nil
	})
	for _, r := range []string{RoleState, RoleAudit, RoleLog, RoleCustomers, RoleDeals} {
		if _, err := t.App(r); err != nil {
			t.Close()
			return nil, fmt.Errorf("sandbox emulator: %w", err)
		}
	}
	cfg, err := WriteKsqlFlowConfig(t, filepath.Join(o.WorkDir, "ksql-flow-config.json"))
	if err != nil {
		t.Close()
		return nil, err
	}
	t.KsqlFlowConfig = cfg
	return t, nil
}

func readServeInfo(ctx context.Context, p *proc.Process) (serveInfo, error) {
	var info serveInfo
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := p.Stdout()
		if line, _, ok := strings.Cut(out, "\n"); ok {
			if err := json.Unmarshal([]byte(line), &info); err != nil {
				return info, fmt.Errorf("sandbox emulator: first stdout line is not its JSON address: %w (%q)", err, line)
			}
			if info.BaseURL == "" {
				return info, fmt.Errorf("sandbox emulator: first stdout line has no base_url: %q", line)
			}
			return info, nil
		}
		if res, done := p.Exited(); done {
			return info, fmt.Errorf("sandbox emulator exited before it listened (%s): %s", res, p.StderrTail())
		}
		if time.Now().After(deadline) {
			return info, fmt.Errorf("sandbox emulator did not report its address within 30s: %s", p.StderrTail())
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-p.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Token variable names the kSQL-Flow config refers to (tokens never sit in the file). They
// are the names the operators' live kSQL-Flow config uses (scenarios.md §6), so a scenario
// that forces a failure by overriding KSQL_TOKEN_CUSTOMERS does the same on both targets.
const (
	EnvKsqlCustomersToken = "KSQL_TOKEN_CUSTOMERS"
	EnvKsqlDealsToken     = "KSQL_TOKEN_DEALS"
	EnvKsqlLogToken       = "KSQL_E2E_TOKEN_LOGS"
	EnvKsqlCSVToken       = "KSQL_CSV1_TARGET_API_TOKEN"
)

// KsqlFlowEnvNames are the variables KsqlFlowEnv passes to kSQL-Flow: the only names a
// kSQL-Flow config may reference as env:NAME (the CSV token only when a CSV app is configured).
func KsqlFlowEnvNames(withCSV bool) []string {
	names := []string{EnvKsqlCustomersToken, EnvKsqlDealsToken, EnvKsqlLogToken}
	if withCSV {
		names = append(names, EnvKsqlCSVToken)
	}
	return names
}

// KsqlFlowEnv is the environment kSQL-Flow needs for the config WriteKsqlFlowConfig wrote:
// the business apps' read tokens and the JOB log app's full token (kSQL-Flow writes it).
func (t *Target) KsqlFlowEnv() []string {
	env := []string{
		EnvKsqlCustomersToken + "=" + t.Apps[RoleCustomers].Tokens["read"],
		EnvKsqlDealsToken + "=" + t.Apps[RoleDeals].Tokens["read"],
		EnvKsqlLogToken + "=" + t.Apps[RoleLog].Token("ksqlflow", "full"),
	}
	if a, ok := t.Apps[RoleCSV]; ok {
		env = append(env, EnvKsqlCSVToken+"="+a.Tokens["full"])
	}
	return env
}

// Logical app names our fixture SQL reads (`FROM LAPP_顧客管理`).
const (
	LogicalCustomers = "顧客管理"
	LogicalDeals     = "案件管理"
	LogicalCSV       = "KSQL_FLOW_TEST_CSV1"
)

// LogicalLog is the logical name of the JOB log app's entry in the kSQL-Flow config
// (`logApp` names an entry of `apps` in the real format).
const LogicalLog = "JOB_LOG"

// ksqlApp is one `apps` entry of the real kSQL-Flow 0.9.0 config: integer id, token refs.
func ksqlApp(id, tokenVar string) (map[string]any, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("app id %q is not a positive integer", id)
	}
	return map[string]any{"id": n, "tokens": []string{"env:" + tokenVar}}, nil
}

// WriteKsqlFlowConfig writes the kSQL-Flow config for the target's profile at path, in the
// real kSQL-Flow 0.9.0 format (its dist/config.js; unknown keys are refused there): no
// formatVersion, apps as {id, tokens}, logApp as a logical name, maxReadRows within its cap
// of 200000, no CA key (the CA goes through SSL_CERT_FILE / NODE_EXTRA_CA_CERTS,
// ChildBaseEnv).
func WriteKsqlFlowConfig(t *Target, path string) (string, error) {
	tz := "Asia/Tokyo"
	entries := []struct{ logical, role, tokenVar string }{
		{LogicalCustomers, RoleCustomers, EnvKsqlCustomersToken},
		{LogicalDeals, RoleDeals, EnvKsqlDealsToken},
		{LogicalLog, RoleLog, EnvKsqlLogToken},
	}
	if _, ok := t.Apps[RoleCSV]; ok {
		entries = append(entries, struct{ logical, role, tokenVar string }{LogicalCSV, RoleCSV, EnvKsqlCSVToken})
	}
	apps := map[string]any{}
	for _, e := range entries {
		a, err := ksqlApp(t.Apps[e.role].ID, e.tokenVar)
		if err != nil {
			return "", fmt.Errorf("kSQL-Flow config, app %s: %w", e.logical, err)
		}
		apps[e.logical] = a
	}
	cfg := map[string]any{
		"profiles": map[string]any{
			t.Profile: map[string]any{
				"baseUrl":  t.BaseURL,
				"timezone": tz,
				"apps":     apps,
				"logApp":   LogicalLog,
				"limits":   map[string]int{"maxApiCalls": 10000, "maxReadRows": 200000, "maxTempRows": 1000000, "batchTimeoutSec": 3600},
			},
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write kSQL-Flow config: %w", err)
	}
	return path, nil
}

// FlowNetEnv is the environment of a FlowNet CLI process (product-contract §6), with base
// URL overridable so a fault proxy can sit in front of kintone for FlowNet only.
func (t *Target) FlowNetEnv(baseURL, ksqlWorkDir string) []string {
	if baseURL == "" {
		baseURL = t.BaseURL
	}
	env := append([]string(nil), t.BaseEnv...)
	env = append(env,
		"KSQL_FLOWNET_PROFILE="+t.Profile,
		"KSQL_FLOWNET_BASE_URL="+baseURL,
		"KSQL_FLOWNET_STATE_APP_ID="+t.Apps[RoleState].ID,
		"KSQL_FLOWNET_STATE_API_TOKEN="+t.Apps[RoleState].Token("flownet", "full"),
		"KSQL_FLOWNET_AUDIT_APP_ID="+t.Apps[RoleAudit].ID,
		"KSQL_FLOWNET_AUDIT_API_TOKEN="+t.Apps[RoleAudit].Token("flownet", "full"),
		"KSQL_FLOW_LOG_APP_ID="+t.Apps[RoleLog].ID,
		"KSQL_FLOW_LOG_API_TOKEN="+t.Apps[RoleLog].Tokens["read"],
		"KSQL_FLOW_BIN="+t.KsqlFlow.Path,
		"KSQL_FLOW_BIN_ARGS="+binArgs(t.KsqlFlow.Args),
		"KSQL_FLOW_CONFIG="+t.KsqlFlowConfig,
		"KSQL_FLOW_WORKDIR="+ksqlWorkDir,
	)
	if a, ok := t.Apps[RoleRequest]; ok {
		env = append(env, "KSQL_FLOWNET_REQUEST_APP_ID="+a.ID, "KSQL_FLOWNET_REQUEST_API_TOKEN="+a.Token("poller", "full"))
	}
	// kSQL-Flow, started by FlowNet, inherits FlowNet's environment: it needs its tokens.
	env = append(env, t.KsqlFlowEnv()...)
	return env
}

func binArgs(args []string) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// Describe lists the target for the acceptance record, without tokens.
func (t *Target) Describe() map[string]string {
	out := map[string]string{"target": t.Name, "profile": t.Profile, "base_url": t.BaseURL}
	var roles []string
	for r := range t.Apps {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	out["apps"] = strings.Join(roles, ", ")
	return out
}
