package config

import "github.com/ksqlflow/flowtest/internal/safety"

// Kind classifies a variable for documentation and the template.
type Kind string

const (
	KindURL           Kind = "url"
	KindAppID         Kind = "app id"
	KindWritableToken Kind = "writable token (OS environment only)"
	KindReadToken     Kind = "read-only token (.env allowed)"
	KindPath          Kind = "path"
	KindText          Kind = "text"
	KindInt           Kind = "integer"
	KindDecimal       Kind = "decimal"
)

// VarSpec documents one variable flowtest reads.
type VarSpec struct {
	Name string
	Kind Kind
	// Flag is the command-line flag that overrides it ("" = none).
	Flag string
	// New marks variables flowtest adds (the rest are the original harness's).
	New  bool
	Help string
}

// Variables flowtest adds beyond the original harness.
const (
	VarFlowNetDir     = "FLOWTEST_FLOWNET_DIR"
	VarFlowNetBin     = "FLOWTEST_FLOWNET_BIN"
	VarFlowNetBinArgs = "FLOWTEST_FLOWNET_BIN_ARGS"
	VarLockDir        = "FLOWTEST_LOCK_DIR"
	VarConcurrency    = "FLOWTEST_CONCURRENCY"
	VarCAFile         = "FLOWTEST_CA_FILE"
	VarTimeoutScale   = "FLOWTEST_TIMEOUT_SCALE"
	VarAPIBudget      = "FLOWTEST_API_BUDGET"
	VarProduct        = "FLOWTEST_PRODUCT"
	VarNode           = "FLOWTEST_NODE"

	VarFlowBin        = "KSQL_FLOW_BIN"
	VarFlowBinArgs    = "KSQL_FLOW_BIN_ARGS"
	VarFlowConfig     = "KSQL_FLOW_CONFIG"
	VarFlowConfigPath = "KSQL_FLOW_CONFIG_PATH"
	VarIODir          = "KSQL_FLOWNET_IO_DIR"
	VarConfirmedBy    = "M5_FORCE_UNLOCK_CONFIRMED_BY"
)

// Variables lists every variable flowtest reads, in template order. The
// env.e2e.example template at the repository root lists exactly these (a
// test keeps them in step).
func Variables() []VarSpec {
	return []VarSpec{
		{safety.VarBaseURL, KindURL, "base-url", false, "kintone base URL of the E2E tenant; live: https:// only, no user-info."},
		{safety.VarProfile, KindText, "profile", false, "kSQL-Flow/FlowNet profile; default e2e; prod and deny-listed profiles are refused."},
		{safety.VarAppExec, KindAppID, "", false, "E2E FlowNet state (execution management) app id."},
		{safety.VarAppAudit, KindAppID, "", false, "E2E FlowNet audit app id."},
		{safety.VarAppLog, KindAppID, "", false, "E2E kSQL-Flow JOB log app id (never the production JOB log)."},
		{safety.VarAppReq, KindAppID, "", false, "E2E operation-request app id (request series: P2-01, P2-11, P2-16, CSV)."},
		{safety.VarAppCSV, KindAppID, "", false, "CSV fixture app id (CSV series)."},
		{safety.VarAppCust, KindAppID, "", true, "Business app 顧客管理 id (read-only; optional, checked for distinctness and the deny list)."},
		{safety.VarAppDeals, KindAppID, "", true, "Business app 案件管理 id (read-only; optional, as above)."},
		{safety.VarTokenExec, KindWritableToken, "", false, "State app token FlowNet writes with (view/add/edit; also delete when KSQL_SPIKE_TOKEN_EXEC_CLEANUP is unset)."},
		{safety.VarTokenExecRO, KindReadToken, "", false, "State app view-only token (optional; must differ from the writable one)."},
		{safety.VarTokenAudit, KindWritableToken, "", false, "Audit app token FlowNet writes with (view/add/edit; also delete when KSQL_SPIKE_TOKEN_AUDIT_CLEANUP is unset)."},
		{safety.VarTokenAuditRO, KindReadToken, "", false, "Audit app view-only token (optional)."},
		{safety.VarTokenExecCleanup, KindWritableToken, "", true, "State app token (view/delete) the harness sweeps scopes with (optional; FlowNet never gets it)."},
		{safety.VarTokenAuditCleanup, KindWritableToken, "", true, "Audit app token (view/delete) the harness sweeps scopes with (optional; FlowNet never gets it)."},
		{safety.VarTokenLogs, KindWritableToken, "", false, "JOB log token kSQL-Flow writes with (passed through to kSQL-Flow; the harness never writes the JOB log)."},
		{safety.VarTokenLogsRO, KindReadToken, "", false, "JOB log view-only token for the harness and FlowNet."},
		{safety.VarTokenRequests, KindWritableToken, "", false, "Request app token FlowNet's poller works with (view/edit; also add/delete when KSQL_E2E_TOKEN_REQUESTS_CLEANUP is unset, because the harness then writes and sweeps with it)."},
		{safety.VarTokenRequestsRO, KindReadToken, "", false, "Request app view-only token for result checks and the pending-request check."},
		{safety.VarTokenRequestsCleanup, KindWritableToken, "", true, "Request app token (view/add/edit/delete) the harness creates, withdraws and sweeps requests with (optional; the poller never gets it)."},
		{safety.VarTokenCSV, KindWritableToken, "", false, "CSV fixture app token (view/add/edit/delete)."},
		{safety.VarTokenCSVRO, KindReadToken, "", false, "CSV fixture app view-only token the harness reads the imported rows with."},
		{safety.VarTokenCustomers, KindReadToken, "", false, "顧客管理 read token kSQL-Flow uses through its config."},
		{safety.VarTokenDeals, KindReadToken, "", false, "案件管理 read token kSQL-Flow uses through its config."},
		{safety.VarProdReqID, KindAppID, "", false, "Production request app id, if present in the operator environment: compared against, must differ."},
		{safety.VarProdReqTk, KindWritableToken, "", false, "Production request app token, if present: compared against, must differ (never put it in .env)."},
		{VarFlowBin, KindPath, "", false, "kSQL-Flow launcher (e.g. node)."},
		{VarFlowBinArgs, KindText, "", false, "kSQL-Flow leading args: JSON array or whitespace-separated (e.g. [\"../ksql-flow/dist/cli.js\"])."},
		{VarFlowConfig, KindPath, "", false, "kSQL-Flow config file (fallback KSQL_FLOW_CONFIG_PATH)."},
		{VarFlowConfigPath, KindPath, "", false, "Older name of KSQL_FLOW_CONFIG, read when that is unset."},
		{VarIODir, KindPath, "", false, "Existing absolute directory for CSV IO roots (CSV series)."},
		{VarConfirmedBy, KindText, "", false, "Confirmer for the force-unlock drill (m5-kill-unknown)."},
		{VarFlowNetDir, KindPath, "flownet-dir", true, "kSQL-FlowNet checkout to test in live mode (its dist/cli/index.js is started)."},
		{VarFlowNetBin, KindPath, "", true, "Launcher for the FlowNet CLI; default node."},
		{VarProduct, KindText, "product", true, "Sandbox: the FlowNet the scenarios drive (default auto): auto (the pinned real product where it can run, else the reference, saying why), real (the pinned @rex0220/ksql-flownet of tools/flownet; blocked without a Node.js its engines accept), reference (flowtest's model), or a directory holding a FlowNet build (package.json and dist/cli/index.js)."},
		{VarNode, KindPath, "node", true, "Sandbox: the Node.js that runs the real FlowNet; default the one make flownet pins (Linux x64), else node on PATH; it must satisfy the product's engines."},
		{VarFlowNetBinArgs, KindText, "", true, "Leading args for the FlowNet CLI (JSON array or whitespace-separated); default dist/cli/index.js inside FLOWTEST_FLOWNET_DIR."},
		{safety.VarDenyList, KindText, "", true, "Extra production deny-list entries (app:ID, job:NAME, profile:NAME; comma-separated), added to the deny-list file."},
		{safety.VarDenyListFile, KindPath, "denylist-file", true, "Deny-list file; default safety/production-denylist.txt of the repository."},
		{VarLockDir, KindPath, "lock-dir", true, "Directory of run-lock files; default <temp>/flowtest-locks."},
		{VarConcurrency, KindInt, "concurrency", true, "Scenarios at once; live mode refuses anything but 1."},
		{VarCAFile, KindPath, "ca-file", true, "Extra PEM CA to trust for the live tenant (optional)."},
		{VarTimeoutScale, KindDecimal, "timeout-scale", true, "Multiplies every named wait limit of the steps (positive decimal; default 1; e.g. 3 for a slow live tenant)."},
		{VarAPIBudget, KindInt, "api-budget", true, "kintone requests a live run may send per app (an integer of at least 1; default 5000, half a standard-plan day); a run estimated above it is refused before it starts."},
	}
}

func specOf(name string) (VarSpec, bool) {
	for _, v := range Variables() {
		if v.Name == name {
			return v, true
		}
	}
	return VarSpec{}, false
}

func flagVar(flag string) (string, bool) {
	for _, v := range Variables() {
		if v.Flag != "" && v.Flag == flag {
			return v.Name, true
		}
	}
	return "", false
}
