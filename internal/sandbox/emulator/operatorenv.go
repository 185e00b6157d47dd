package emulator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The operator's live setup for this emulator (`serve --operator-env DIR`): the files docs/live.md
// tells an operator to make for a real tenant, so that `flowtest run --target
// live` can be rehearsed against the emulator through exactly the code path of a release
// gate. The variable names are flowtest's (internal/harness/config, safety); the sandbox must not
// import them (it imports kintoneapi only), so internal/app/cli's rehearsal test checks every name
// written here against flowtest's catalogue and runs `flowtest check --target live` on it.

// Files written into the operator-env directory.
const (
	OperatorDotEnv    = ".env"                    // non-secret settings and read-only tokens
	OperatorTokens    = "tokens.sh"               // `export NAME='token'` lines: the writable tokens
	OperatorFlowConf  = "ksql-flow-config.json"   // kSQL-Flow config (docs/live.md step 3)
	OperatorDenyList  = "production-denylist.txt" // a deny list naming none of the emulator's apps
	OperatorCAFile    = "tenant-ca.pem"           // the emulator's CA (the operator's FLOWTEST_CA_FILE)
	OperatorIODir     = "io"                      // KSQL_FLOWNET_IO_DIR
	operatorFileIntro = "# Written by `flowsandbox kintone serve --operator-env`: an operator's live setup for this emulator.\n"
)

// operatorToken is one token variable of the live setup: which app it belongs to, the
// permissions its role needs, and whether it is read-only (view and nothing else; it may sit
// in .env) or writable (OS environment only: tokens.sh).
type operatorToken struct {
	name, role string
	needs      []string
	readOnly   bool
}

// operatorTokens follows docs/live.md step 2 (narrowest token per role): FlowNet's
// state/audit writers view/add/edit, the harness's cleanup tokens view/delete, kSQL-Flow's JOB
// log writer view/add/edit, FlowNet's request poller view/edit, the harness's request token and
// the CSV token view/add/edit/delete (the harness creates, withdraws and sweeps with them),
// every other one view only.
var operatorTokens = []operatorToken{
	{"KSQL_SPIKE_TOKEN_EXEC", "state", []string{permView, permAdd, permEdit}, false},
	{"KSQL_SPIKE_TOKEN_AUDIT", "audit", []string{permView, permAdd, permEdit}, false},
	{"KSQL_SPIKE_TOKEN_EXEC_CLEANUP", "state", []string{permView, permDelete}, false},
	{"KSQL_SPIKE_TOKEN_AUDIT_CLEANUP", "audit", []string{permView, permDelete}, false},
	{"KSQL_E2E_TOKEN_LOGS", "log", []string{permView, permAdd, permEdit}, false},
	{"KSQL_E2E_TOKEN_REQUESTS", "request", []string{permView, permEdit}, false},
	{"KSQL_E2E_TOKEN_REQUESTS_CLEANUP", "request", []string{permView, permAdd, permEdit, permDelete}, false},
	{"KSQL_CSV1_TARGET_API_TOKEN", "csv", []string{permView, permAdd, permEdit, permDelete}, false},
	{"KSQL_SPIKE_TOKEN_EXEC_RO", "state", []string{permView}, true},
	{"KSQL_SPIKE_TOKEN_AUDIT_RO", "audit", []string{permView}, true},
	{"KSQL_E2E_TOKEN_LOGS_RO", "log", []string{permView}, true},
	{"KSQL_E2E_TOKEN_REQUESTS_RO", "request", []string{permView}, true},
	{"KSQL_CSV1_TARGET_API_TOKEN_RO", "csv", []string{permView}, true},
	{"KSQL_TOKEN_CUSTOMERS", "customers", []string{permView}, true},
	{"KSQL_TOKEN_DEALS", "deals", []string{permView}, true},
}

// operatorApps are the app-id variables by app role.
var operatorApps = []struct{ name, role string }{
	{"KSQL_SPIKE_APP_EXEC", "state"},
	{"KSQL_SPIKE_APP_AUDIT", "audit"},
	{"KSQL_E2E_LOG_APP_ID", "log"},
	{"KSQL_E2E_REQUEST_APP_ID", "request"},
	{"KSQL_CSV1_TARGET_APP_ID", "csv"},
	{"FLOWTEST_APP_CUSTOMERS", "customers"},
	{"FLOWTEST_APP_DEALS", "deals"},
}

// narrowestToken picks the app's token whose permission set has every permission needed and
// the fewest others (read-only: exactly view), so each role gets no more than it needs.
func (s *Server) narrowestToken(role string, needs []string, readOnly bool) (string, error) {
	a := s.appByRole(role)
	if a == nil {
		return "", fmt.Errorf("no %s app", role)
	}
	best, bestN := "", 0
	sets := make([]string, 0, len(a.schema.Tokens))
	for set := range a.schema.Tokens {
		sets = append(sets, set)
	}
	sort.Strings(sets) // ties go to the first name: the same choice on every start
	for _, set := range sets {
		perms := a.schema.Tokens[set]
		ok := true
		for _, p := range needs {
			ok = ok && slices.Contains(perms, p)
		}
		if !ok || (readOnly && len(perms) != len(needs)) {
			continue
		}
		if best == "" || len(perms) < bestN {
			best, bestN = set, len(perms)
		}
	}
	if best == "" {
		return "", fmt.Errorf("the %s app has no token set with %s", role, strings.Join(needs, "/"))
	}
	return a.tokens[best], nil
}

// OperatorEnvOptions say how the launchers of the live setup are started.
type OperatorEnvOptions struct {
	// Sandbox is the flowsandbox binary: `flowsandbox flownet` and `flowsandbox ksql-flow` are
	// the FlowNet CLI and kSQL-Flow launchers of the setup.
	Sandbox string
	// Profile is the kSQL-Flow / FlowNet profile (default e2e).
	Profile string
}

// WriteOperatorEnv writes into dir (created if missing) the live setup of this emulator:
// .env with the E2E variables, the read-only tokens and the launchers; tokens.sh exporting the
// writable tokens (never in .env: flowtest refuses that); the kSQL-Flow config, which reads
// its tokens from exactly the variables flowtest passes to kSQL-Flow; a deny list naming none
// of the emulator's apps (live mode refuses an empty one); the CA and the CSV IO directory.
func (s *Server) WriteOperatorEnv(dir string, o OperatorEnvOptions) error {
	if s.caFile == "" {
		return fmt.Errorf("operator env: the emulator serves plain http; live mode needs https")
	}
	if o.Sandbox == "" {
		return fmt.Errorf("operator env: no flowsandbox binary for the launchers")
	}
	if o.Profile == "" {
		o.Profile = "e2e"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("operator env: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, OperatorIODir), 0o755); err != nil {
		return fmt.Errorf("operator env: %w", err)
	}
	ids := map[string]string{}
	for _, a := range s.apps {
		ids[a.schema.Role] = a.id()
	}
	ca, err := os.ReadFile(s.caFile)
	if err != nil {
		return fmt.Errorf("operator env: read the emulator's CA: %w", err)
	}
	caPath := filepath.Join(dir, OperatorCAFile)

	env, exports, err := s.operatorSettings(dir, caPath, ids, o)
	if err != nil {
		return err
	}
	flowConf, err := s.operatorFlowConfig(ids, o.Profile)
	if err != nil {
		return err
	}
	deny := operatorFileIntro + "# Production ids of a made-up tenant: none is one of the emulator's apps.\n" +
		"app:4261\napp:4262\napp:4249\njob:monthly_deal_summary\nprofile:prod\n"

	files := []struct {
		name string
		data string
	}{
		{OperatorCAFile, string(ca)},
		{OperatorFlowConf, string(flowConf) + "\n"},
		{OperatorDenyList, deny},
		{OperatorTokens, operatorFileIntro + "# The writable tokens (OS environment only, never .env): `. ./tokens.sh` before flowtest.\n" +
			strings.Join(exports, "\n") + "\n"},
		// .env last: a reader that sees it finds everything it names.
		{OperatorDotEnv, operatorFileIntro + "# Non-secret settings and read-only tokens; the writable ones are in tokens.sh.\n" +
			strings.Join(env, "\n") + "\n"},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o600); err != nil {
			return fmt.Errorf("operator env: %w", err)
		}
	}
	return nil
}

// operatorSettings are the lines of the operator's .env (non-secret settings and the
// read-only tokens) and of tokens.sh (exports of the writable tokens).
func (s *Server) operatorSettings(dir, caPath string, ids map[string]string, o OperatorEnvOptions) (env, exports []string, err error) {
	set := func(k, v string) { env = append(env, k+"="+envQuote(v)) }
	set("KSQL_SPIKE_BASE_URL", s.baseURL)
	set("KSQL_FLOWNET_PROFILE", o.Profile)
	set("FLOWTEST_CA_FILE", caPath)
	for _, a := range operatorApps {
		if ids[a.role] == "" {
			return nil, nil, fmt.Errorf("operator env: the emulator has no %s app", a.role)
		}
		set(a.name, ids[a.role])
	}
	for _, t := range operatorTokens {
		tok, err := s.narrowestToken(t.role, t.needs, t.readOnly)
		if err != nil {
			return nil, nil, fmt.Errorf("operator env: %s: %w", t.name, err)
		}
		if t.readOnly {
			set(t.name, tok)
		} else {
			exports = append(exports, "export "+t.name+"='"+tok+"'")
		}
	}
	args := func(a ...string) string { b, _ := json.Marshal(a); return string(b) }
	set("FLOWTEST_FLOWNET_BIN", o.Sandbox)
	set("FLOWTEST_FLOWNET_BIN_ARGS", args("flownet"))
	set("KSQL_FLOW_BIN", o.Sandbox)
	set("KSQL_FLOW_BIN_ARGS", args("ksql-flow"))
	set("KSQL_FLOW_CONFIG", filepath.Join(dir, OperatorFlowConf))
	set("FLOWTEST_DENYLIST_FILE", filepath.Join(dir, OperatorDenyList))
	set("KSQL_FLOWNET_IO_DIR", filepath.Join(dir, OperatorIODir))
	return env, exports, nil
}

// operatorFlowConfig is the kSQL-Flow config of the operator's profile, apps named by id.
func (s *Server) operatorFlowConfig(ids map[string]string, profile string) ([]byte, error) {
	// The kSQL-Flow config an operator writes for the real kSQL-Flow 0.9.0 (its
	// dist/config.js): no formatVersion, each app {"id": <integer>, "tokens": ["env:NAME"]},
	// logApp the logical name of the JOB log app's entry.
	app := func(role, tokenVar string) (map[string]any, error) {
		n, err := strconv.ParseInt(ids[role], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("operator env: %s app id %q: %w", role, ids[role], err)
		}
		return map[string]any{"id": n, "tokens": []string{"env:" + tokenVar}}, nil
	}
	apps := map[string]any{}
	for _, a := range []struct{ logical, role, tokenVar string }{
		{"顧客管理", "customers", "KSQL_TOKEN_CUSTOMERS"},
		{"案件管理", "deals", "KSQL_TOKEN_DEALS"},
		{"KSQL_FLOW_TEST_CSV1", "csv", "KSQL_CSV1_TARGET_API_TOKEN"},
		{"JOB_LOG", "log", "KSQL_E2E_TOKEN_LOGS"},
	} {
		entry, err := app(a.role, a.tokenVar)
		if err != nil {
			return nil, err
		}
		apps[a.logical] = entry
	}
	flowConf, err := json.MarshalIndent(map[string]any{
		"profiles": map[string]any{profile: map[string]any{
			"baseUrl":  s.baseURL,
			"timezone": "Asia/Tokyo",
			"apps":     apps,
			"logApp":   "JOB_LOG",
			// An operator of a shared tenant lets kSQL-Flow back off on kintone's 429 (the
			// emulator answers it under --concurrency-limit) as the shared client does.
			"retry": operatorRetry,
		}},
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("operator env: kSQL-Flow config: %w", err)
	}
	return flowConf, nil
}

// operatorRetry is the kSQL-Flow retry policy of the operator's config: the shared client's
// default backoff (kintoneapi.DefaultRetry) in the config's words.
var operatorRetry = map[string]any{"maxAttempts": 8, "initialDelayMs": 250, "maxDelayMs": 8000, "respectRetryAfter": true}
