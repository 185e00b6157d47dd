package cli

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/app/preflight"
	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// productTokenKind names, per app with a cleanup token, the token kind FlowNet's children
// ask the target for (target.FlowNetEnv): the same kinds the sandbox emulator mints.
var productTokenKind = map[safety.AppRole]string{
	safety.RoleState: "flownet", safety.RoleAudit: "flownet", safety.RoleRequest: "poller",
}

// liveTarget resolves a live tenant from the configuration (which the safety gate checked).
func liveTarget(cfg *config.Config) (*target.Target, error) {
	t := &target.Target{
		Name: "live", Profile: cfg.Profile(), BaseURL: cfg.Get(safety.VarBaseURL),
		CAFile: cfg.Get("FLOWTEST_CA_FILE"), Apps: map[string]target.App{},
		KsqlFlowConfig: cfg.FlowConfig(), Versions: map[string]string{}, IODir: cfg.Get(config.VarIODir),
	}
	for role, a := range cfg.LiveApps() {
		tokens := map[string]string{"full": a.Full, "read": a.Read}
		if kind := productTokenKind[role]; kind != "" {
			// FlowNet writes with the app's writable token (state/audit: view/add/edit; the
			// request poller: view/edit); the harness writes and sweeps with the cleanup token
			// when one is configured, else with that same token (which then needs delete).
			tokens[kind] = a.Full
			if a.Cleanup != "" {
				tokens["full"] = a.Cleanup
			}
		}
		t.Apps[string(role)] = target.App{Role: string(role), ID: a.ID, Tokens: tokens}
	}
	// Business apps have only read tokens; kSQL-Flow reads them with those.
	bin, args, dir, err := cfg.FlowNetCommand()
	if err != nil {
		return nil, fmt.Errorf("live FlowNet CLI: %w", err)
	}
	t.FlowNet = target.Command{Path: bin, Args: args, Dir: dir}
	t.Product = target.LiveProduct(dir)
	flowArgs, err := cfg.FlowBinArgs()
	if err != nil {
		return nil, err
	}
	if cfg.Get("KSQL_FLOW_BIN") == "" {
		return nil, fmt.Errorf("KSQL_FLOW_BIN is not set: how is kSQL-Flow started?")
	}
	t.KsqlFlow = target.Command{Path: cfg.Get("KSQL_FLOW_BIN"), Args: flowArgs}
	t.BaseEnv = target.ChildBaseEnv(t.CAFile)
	return t, nil
}

// pendingReader reads the live request app with its read-only token (rule 9).
func pendingReader(cfg *config.Config, c *apicount.Counter) (safety.PendingReader, error) {
	apps := cfg.LiveApps()
	req, ok := apps[safety.RoleRequest]
	if !ok {
		return kintoneguard.PendingReader{}, nil // no request app: the check reports it
	}
	hc, err := preflight.TenantHTTP(cfg.Get("FLOWTEST_CA_FILE"), c)
	if err != nil {
		return nil, err
	}
	api := kintoneapi.New(cfg.Get(safety.VarBaseURL), hc, map[string]string{req.ID: req.Read})
	return kintoneguard.PendingReader{API: api}, nil
}

// cleaner sweeps a scope's records through the guarded client, with the tokens that may
// delete in the state and audit apps.
type cleaner struct {
	t   *target.Target
	api *kintoneapi.Client
}

func newCleaner(t *target.Target) *cleaner {
	hc, err := preflight.TenantHTTP(t.CAFile, nil) // what it deletes for a scenario counts on the scenario's counter
	if err != nil {
		return &cleaner{t: t}
	}
	tokens := map[string]string{}
	for _, role := range []string{target.RoleState, target.RoleAudit} {
		if a, ok := t.Apps[role]; ok {
			tokens[a.ID] = a.Token("cleanup", "full")
		}
	}
	return &cleaner{t: t, api: kintoneapi.New(t.BaseURL, hc, tokens)}
}

func (c *cleaner) DeleteScope(ctx context.Context, sc *scope.Scope, _ []string) (int, error) {
	if c.api == nil {
		return 0, fmt.Errorf("no kintone client for cleanup (CA file %s unreadable)", c.t.CAFile)
	}
	g, err := kintoneguard.New(c.api, guardApps(c.t), sc.ID(), kintoneguard.Options{Profile: c.t.Profile})
	if err != nil {
		return 0, err
	}
	return g.SweepScope(ctx)
}

// guardApps are the target's app ids by role, as the guarded client needs them (the JOB log
// and business apps too: the guard refuses every write to them by role).
func guardApps(t *target.Target) kintoneguard.Apps {
	apps := kintoneguard.Apps{State: t.Apps[target.RoleState].ID, Audit: t.Apps[target.RoleAudit].ID,
		Request: t.Apps[target.RoleRequest].ID, Log: t.Apps[target.RoleLog].ID, CSV: t.Apps[target.RoleCSV].ID}
	for _, r := range []string{target.RoleCustomers, target.RoleDeals} {
		if a, ok := t.Apps[r]; ok {
			apps.Business = append(apps.Business, a.ID)
		}
	}
	return apps
}
