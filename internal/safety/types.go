package safety

import (
	"slices"
	"strings"
)

// Target is where scenarios run.
type Target string

const (
	TargetSandbox Target = "sandbox"
	TargetLive    Target = "live"
)

// Origin records where a setting's value came from; rule 5 and rule 1 depend on it.
type Origin string

const (
	OriginUnset    Origin = ""
	OriginDefault  Origin = "default"
	OriginFlag     Origin = "flag"
	OriginOSEnv    Origin = "os-env"
	OriginDotEnv   Origin = ".env"
	OriginEmulator Origin = "emulator"
)

// Setting is one configuration value with the variable (or flag) name used in
// messages and where the value came from.
type Setting struct {
	Name   string
	Value  string
	Origin Origin
}

// Set reports whether the setting carries a value.
func (s Setting) Set() bool { return s.Origin != OriginUnset }

// AppRole names what a kintone app is used for.
type AppRole string

const (
	RoleState     AppRole = "state" // FlowNet execution management ("spike EXEC")
	RoleAudit     AppRole = "audit"
	RoleRequest   AppRole = "request"
	RoleLog       AppRole = "log" // kSQL-Flow JOB log
	RoleCSV       AppRole = "csv" // CSV fixture app
	RoleCustomers AppRole = "customers"
	RoleDeals     AppRole = "deals"
)

// Environment variable names (those of the original harness, scenarios.md §6.1,
// plus the few flowtest adds, prefixed FLOWTEST_).
const (
	VarBaseURL   = "KSQL_SPIKE_BASE_URL"
	VarProfile   = "KSQL_FLOWNET_PROFILE"
	VarAppExec   = "KSQL_SPIKE_APP_EXEC"
	VarAppAudit  = "KSQL_SPIKE_APP_AUDIT"
	VarAppLog    = "KSQL_E2E_LOG_APP_ID"
	VarAppReq    = "KSQL_E2E_REQUEST_APP_ID"
	VarAppCSV    = "KSQL_CSV1_TARGET_APP_ID"
	VarAppCust   = "FLOWTEST_APP_CUSTOMERS"
	VarAppDeals  = "FLOWTEST_APP_DEALS"
	VarProdReqID = "KSQL_FLOWNET_REQUEST_APP_ID"
	VarProdReqTk = "KSQL_FLOWNET_REQUEST_API_TOKEN"

	VarTokenExec       = "KSQL_SPIKE_TOKEN_EXEC"
	VarTokenExecRO     = "KSQL_SPIKE_TOKEN_EXEC_RO"
	VarTokenAudit      = "KSQL_SPIKE_TOKEN_AUDIT"
	VarTokenAuditRO    = "KSQL_SPIKE_TOKEN_AUDIT_RO"
	VarTokenLogs       = "KSQL_E2E_TOKEN_LOGS"
	VarTokenLogsRO     = "KSQL_E2E_TOKEN_LOGS_RO"
	VarTokenRequests   = "KSQL_E2E_TOKEN_REQUESTS"
	VarTokenRequestsRO = "KSQL_E2E_TOKEN_REQUESTS_RO"
	VarTokenCSV        = "KSQL_CSV1_TARGET_API_TOKEN"
	VarTokenCSVRO      = "KSQL_CSV1_TARGET_API_TOKEN_RO"
	VarTokenCustomers  = "KSQL_TOKEN_CUSTOMERS"
	VarTokenDeals      = "KSQL_TOKEN_DEALS"
	// The harness's cleanup tokens (view/delete) of the state and audit apps; optional: unset,
	// KSQL_SPIKE_TOKEN_EXEC / _AUDIT (then FlowNet's and the harness's) must also delete.
	VarTokenExecCleanup  = "KSQL_SPIKE_TOKEN_EXEC_CLEANUP"
	VarTokenAuditCleanup = "KSQL_SPIKE_TOKEN_AUDIT_CLEANUP"
	// The harness's request-app token (view/add/edit/delete: it creates, withdraws and sweeps
	// requests); optional: unset, KSQL_E2E_TOKEN_REQUESTS (then the poller's and the
	// harness's) needs all four, else the poller's needs only view/edit.
	VarTokenRequestsCleanup = "KSQL_E2E_TOKEN_REQUESTS_CLEANUP"

	VarDenyList     = "FLOWTEST_PRODUCTION_DENYLIST"
	VarDenyListFile = "FLOWTEST_DENYLIST_FILE"
	VarTargetHint   = "FLOWTEST_TARGET" // never honoured: live needs --target live
)

// AppSpec ties an app-id variable to its role.
type AppSpec struct {
	Name string
	Role AppRole
}

// AppCatalog lists every app-id variable flowtest reads, in report order.
func AppCatalog() []AppSpec {
	return []AppSpec{
		{VarAppExec, RoleState}, {VarAppAudit, RoleAudit}, {VarAppLog, RoleLog},
		{VarAppReq, RoleRequest}, {VarAppCSV, RoleCSV},
		{VarAppCust, RoleCustomers}, {VarAppDeals, RoleDeals},
	}
}

// TokenSpec describes one token variable.
type TokenSpec struct {
	Name     string
	Role     AppRole
	Writable bool
	// ReadOnlyOf names the writable counterpart of a read-only token ("" if none).
	ReadOnlyOf string
	// Cleanup marks the harness's delete-capable token of an app whose writable token is
	// FlowNet's (state, audit: view/add/edit; request: the poller's view/edit).
	Cleanup bool
}

// TokenCatalog lists every token variable flowtest reads. KSQL_E2E_TOKEN_LOGS
// is writable: kSQL-Flow writes the JOB log with it.
func TokenCatalog() []TokenSpec {
	return []TokenSpec{
		{VarTokenExec, RoleState, true, "", false},
		{VarTokenExecRO, RoleState, false, VarTokenExec, false},
		{VarTokenAudit, RoleAudit, true, "", false},
		{VarTokenAuditRO, RoleAudit, false, VarTokenAudit, false},
		{VarTokenExecCleanup, RoleState, true, "", true},
		{VarTokenAuditCleanup, RoleAudit, true, "", true},
		{VarTokenLogs, RoleLog, true, "", false},
		{VarTokenLogsRO, RoleLog, false, VarTokenLogs, false},
		{VarTokenRequests, RoleRequest, true, "", false},
		{VarTokenRequestsRO, RoleRequest, false, VarTokenRequests, false},
		{VarTokenRequestsCleanup, RoleRequest, true, "", true},
		{VarTokenCSV, RoleCSV, true, "", false},
		{VarTokenCSVRO, RoleCSV, false, VarTokenCSV, false},
		{VarTokenCustomers, RoleCustomers, false, "", false},
		{VarTokenDeals, RoleDeals, false, "", false},
	}
}

// IsWritableToken classifies a variable name for the ".env holds read-only
// tokens only" rule. It fails closed: any name containing TOKEN (or SECRET,
// PASSWORD) is writable unless it is a catalogued read-only token or ends in
// _RO. So an unknown or production token (KSQL_FLOWNET_REQUEST_API_TOKEN) in
// .env is refused too.
func IsWritableToken(name string) bool {
	u := strings.ToUpper(name)
	if !strings.Contains(u, "TOKEN") && !strings.Contains(u, "SECRET") && !strings.Contains(u, "PASSWORD") {
		return false
	}
	for _, t := range TokenCatalog() {
		if t.Name == name {
			return t.Writable
		}
	}
	return !strings.HasSuffix(u, "_RO")
}

// App is one app-id setting with its role.
type App struct {
	Role AppRole
	Setting
}

// Token is one token setting with its catalogue entry's properties.
type Token struct {
	Setting
	Role       AppRole
	Writable   bool
	ReadOnlyOf string
}

// NewToken builds a Token from its catalogue entry.
func NewToken(spec TokenSpec, s Setting) Token {
	return Token{Setting: s, Role: spec.Role, Writable: spec.Writable, ReadOnlyOf: spec.ReadOnlyOf}
}

// Identifier kinds (rule 7).
type IdentKind string

const (
	IdentScope            IdentKind = "scope"
	IdentNetworkID        IdentKind = "network_id"
	IdentNodeID           IdentKind = "node_id"
	IdentJobID            IdentKind = "job_id"
	IdentReason           IdentKind = "request_reason"
	IdentServicePrincipal IdentKind = "service_principal"
	IdentRequester        IdentKind = "requester"
	IdentPollerHost       IdentKind = "poller_host"
	IdentBarrierID        IdentKind = "barrier_id"
	IdentCSVKey           IdentKind = "csv_key"
	IdentOther            IdentKind = "other"
)

// TestPrefix starts every generated identifier (exact, case-sensitive).
const TestPrefix = "KSQL_FLOW_TEST_"

// Identifier is one generated identifier of a scenario.
type Identifier struct {
	Scenario string
	Kind     IdentKind
	Value    string
}

// FixtureKind says how a fixture is checked.
type FixtureKind string

const (
	FixtureNetwork FixtureKind = "network"
	FixtureSQL     FixtureKind = "sql"
)

// Fixture is one fixture file a selected scenario uses (rendered or source).
type Fixture struct {
	Scenario string
	Kind     FixtureKind
	// Path is shown in messages.
	Path string
	// Name is the fixture's file name as checked against the network
	// allow-list; empty means the base name of Path.
	Name string
	// Content is the network YAML (job ids are read from nodes[].job_id) or
	// the SQL text.
	Content []byte
	// JobIDs are further job ids to check against the production deny list,
	// e.g. the original names before re-prefixing.
	JobIDs []string
}

// Resolved carries the settings the sandbox emulator reports (sandbox mode).
type Resolved struct {
	BaseURL string
	Apps    map[AppRole]string
	// Tokens is keyed by the token variable name (VarTokenExec, …).
	Tokens map[string]string
}

// Input is everything the checks look at.
type Input struct {
	Target       Target
	TargetOrigin Origin
	// TargetHints are target-looking settings found outside the flags
	// (FLOWTEST_TARGET in the environment or .env); they are never honoured.
	TargetHints []Setting

	Profile Setting
	BaseURL Setting
	Apps    []App
	Tokens  []Token

	// Production request-app settings present in the operator environment.
	ProductionRequestApp   Setting
	ProductionRequestToken Setting

	DenyList        DenyList
	DenyListSources []string // files and variables the list was read from
	DenyListErrors  []string // unreadable file, malformed entries

	// DotEnvFile is the .env path; DotEnvNames the variables it sets to a
	// non-empty value (whether or not the OS environment overrode them).
	DotEnvFile  string
	DotEnvNames []string
	// FlagNames are the variables given by command-line flags.
	FlagNames []string

	Concurrency int
	// ConcurrencyFrom says where Concurrency came from ("the sandbox default …", "--concurrency"),
	// for the check's line; "" says nothing.
	ConcurrencyFrom string

	// Scenarios are the selected scenario ids; nil means "all" (so every
	// need's requirements apply).
	Scenarios []string
	// ScenarioNeeds are the selected scenarios' needs as the run-order
	// manifest declares them (features/manifest.yaml `needs`), by id. A
	// selected scenario without an entry is taken to need everything: a
	// caller that forgets the declaration gets the stricter checks.
	ScenarioNeeds map[string]Needs

	Identifiers []Identifier
	Fixtures    []Fixture

	// NetworkAllowList overrides DefaultNetworkAllowList when non-nil.
	NetworkAllowList []string
	// CSVLogicalApp is the kSQL-Flow logical app name of the CSV fixture app
	// (default KSQL_FLOW_TEST_CSV1); SQL may IMPORT INTO LAPP_<name> only.
	CSVLogicalApp string
}

// DefaultCSVLogicalApp is the logical name the original harness used.
const DefaultCSVLogicalApp = "KSQL_FLOW_TEST_CSV1"

// DefaultNetworkAllowList holds the network fixtures of scenarios.md §7 that
// acceptance scenarios use (the manual-driver-only p208/p209 "live" networks
// are deliberately absent).
func DefaultNetworkAllowList() []string {
	return []string{
		"network-success.yaml", "network-midfail.yaml", "network-diamond.yaml",
		"network-m6-midfail.yaml", "network-nonidem.yaml", "network-drill.yaml",
		"network-m7-control-plane.yaml", "network-rerun-nonidem.yaml",
		"network-rerun-nonidem2.yaml", "network-brake.yaml",
		"network-p211-explicit.yaml", "network-p211-scheduled.yaml",
		"network-p216-longfail.yaml", "network-csv1-import.yaml",
		"network-csv2-export.yaml",
	}
}

// Needs are what one scenario uses beyond the base apps (state, audit, JOB
// log), as the run-order manifest declares it; the caller translates the
// manifest's need names, so this package keeps importing nothing of ours.
type Needs struct {
	RequestApp bool // "request-app": the E2E request app and its two tokens (§3.2)
	CSV        bool // "csv-io": the CSV fixture app and its token (§3.4)
}

func (in Input) needsOf(id string) Needs {
	if n, ok := in.ScenarioNeeds[id]; ok {
		return n
	}
	return Needs{RequestApp: true, CSV: true}
}

func (in Input) needsRequest() bool {
	return in.Scenarios == nil || slices.ContainsFunc(in.Scenarios, func(id string) bool { return in.needsOf(id).RequestApp })
}

func (in Input) needsCSV() bool {
	return in.Scenarios == nil || slices.ContainsFunc(in.Scenarios, func(id string) bool { return in.needsOf(id).CSV })
}

// EffectiveProfile is the profile the run uses (default e2e when unset).
func (in Input) EffectiveProfile() string {
	if !in.Profile.Set() {
		return "e2e"
	}
	return in.Profile.Value
}

func (in Input) app(role AppRole) (App, bool) {
	for _, a := range in.Apps {
		if a.Role == role {
			return a, true
		}
	}
	return App{}, false
}

func (in Input) token(name string) (Token, bool) {
	for _, t := range in.Tokens {
		if t.Name == name {
			return t, true
		}
	}
	return Token{}, false
}

// WithResolved returns a copy of in whose base URL, app ids and tokens are
// those the sandbox emulator reported (Origin emulator). Production
// request-app settings from the operator environment are kept, so they are
// still compared.
func (in Input) WithResolved(r Resolved) Input {
	out := in
	out.BaseURL = Setting{Name: VarBaseURL + " (emulator)", Value: r.BaseURL, Origin: OriginEmulator}
	out.Apps = nil
	for _, a := range AppCatalog() {
		if v, ok := r.Apps[a.Role]; ok {
			out.Apps = append(out.Apps, App{Role: a.Role, Setting: Setting{Name: a.Name, Value: v, Origin: OriginEmulator}})
		}
	}
	out.Tokens = nil
	for _, t := range TokenCatalog() {
		if v, ok := r.Tokens[t.Name]; ok {
			out.Tokens = append(out.Tokens, NewToken(t, Setting{Name: t.Name, Value: v, Origin: OriginEmulator}))
		}
	}
	return out
}

// ResolvedApp is one app as a target reports it: id, writable ("full") and
// read-only token.
type ResolvedApp struct {
	ID, Full, Read string
}

// TokenVars names the writable and read-only token variables of a role ("" where the
// role has none: business apps have only read tokens, the CSV app only a writable one).
func TokenVars(role AppRole) (full, read string) {
	for _, t := range TokenCatalog() {
		if t.Role != role || t.Cleanup {
			continue
		}
		if t.Writable {
			full = t.Name
		} else {
			read = t.Name
		}
	}
	return full, read
}

// CleanupTokenVar names the harness's cleanup token variable of role ("" if it has none).
func CleanupTokenVar(role AppRole) string {
	for _, t := range TokenCatalog() {
		if t.Role == role && t.Cleanup {
			return t.Name
		}
	}
	return ""
}

// NewResolved builds the Resolved of a target (e.g. the sandbox emulator's apps) so
// CheckTarget can compare it like configuration.
func NewResolved(baseURL string, apps map[AppRole]ResolvedApp) Resolved {
	r := Resolved{BaseURL: baseURL, Apps: map[AppRole]string{}, Tokens: map[string]string{}}
	for role, a := range apps {
		r.Apps[role] = a.ID
		full, read := TokenVars(role)
		if full != "" && a.Full != "" {
			r.Tokens[full] = a.Full
		}
		if read != "" && a.Read != "" {
			r.Tokens[read] = a.Read
		}
	}
	return r
}
