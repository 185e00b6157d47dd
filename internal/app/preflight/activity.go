package preflight

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// Another runner on the same tenant, found from the tenant itself (the run lock covers one
// host and one lock directory only). At preflight time this run has written nothing, so any
// activity in the E2E state and audit apps is another runner's, or one that stopped moments
// ago. The rule, from the record shapes of product-contract.md §3.6–§3.8 and §4.1–§4.2:
//
//   - a NETWORK_LOCK whose status is RUNNING, whose lock_key is set (a held lock; a released
//     one is a tombstone with lock_key cleared) and whose lease has not run out:
//     now ≤ lease_expires_at + 60 s (the contract's LIVE rule; DATETIME is minute precision).
//     A held lock whose lease_expires_at does not parse counts as held (fail closed);
//   - a NETWORK_RUN whose status is RUNNING and whose updated_at (started_at when empty) is
//     within activityWindow;
//   - a RUN_INVOCATION whose status is RUNNING and whose started_at is within activityWindow.
//
// The queries use `in` on the drop-downs only; every result is filtered again exactly in Go
// (record_type, status, and the run_id / invocation_id joins that name the scope), never by
// kintone's token-matching `=` on text. Stale leftovers of a crash (older than the window,
// lease expired) do not refuse: they are the sweep's business, not a runner's.
const (
	activityWindow = 5 * time.Minute
	leaseAllowance = 60 * time.Second
)

// recordReader is the one read the activity check needs (kintoneapi.Client.GetAll).
type recordReader interface {
	GetAll(ctx context.Context, app, condition string, fields []string) ([]kintoneapi.Record, error)
}

// activity is one record that shows another runner at work.
type activity struct {
	Scope  string // the scope prefix (KSQL_FLOW_TEST_<yyMMddHHmmss>_<hex4>) or what is known instead
	What   string // record kind and age, e.g. "held network lock (heartbeat 20s ago, lease ends in 40s)"
	sortAt time.Time
}

var scopeHeadRE = regexp.MustCompile(`^KSQL_FLOW_TEST_[0-9]{12}_[0-9a-f]{4}`)

// scopeLabel names the scope of a run by its business key or network id: the unique head of
// a flowtest scope; or, for a run outside flowtest's scope form, the network id (never a
// token or app id: those are not in these fields).
func scopeLabel(networkID, businessKey string) string {
	for _, v := range []string{businessKey, networkID} {
		if m := scopeHeadRE.FindString(v); m != "" {
			return "scope " + m
		}
	}
	if networkID == "" {
		return "an unidentified run"
	}
	if strings.HasPrefix(networkID, safety.TestPrefix) {
		return fmt.Sprintf("network %s (KSQL_FLOW_TEST_ but not a flowtest scope)", networkID)
	}
	return fmt.Sprintf("network %s (not a KSQL_FLOW_TEST_ scope: someone else is using the E2E apps)", networkID)
}

// parsedTime is kintoneapi.ParseDateTime with whether the value parsed.
func parsedTime(v string) (time.Time, bool) {
	t := kintoneapi.ParseDateTime(v)
	return t, !t.IsZero()
}

func age(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "just now (a clock ahead of ours)"
	}
	return d.String() + " ago"
}

func exact(recs []kintoneapi.Record, recordType, status string) []kintoneapi.Record {
	return kintoneapi.Where(kintoneapi.Where(recs, "record_type", recordType), "status", status)
}

// findTenantActivity applies the rule above to the state and audit apps (audit "" = not
// configured) at now.
func findTenantActivity(ctx context.Context, r recordReader, stateApp, auditApp string, now time.Time) ([]activity, error) {
	locks, runs, invs, err := readRunning(ctx, r, stateApp, auditApp)
	if err != nil {
		return nil, err
	}
	runByID := map[string]kintoneapi.Record{}
	for _, run := range runs {
		runByID[run.Str("run_id")] = run
	}
	runOfInv := map[string]string{}
	for _, inv := range invs {
		runOfInv[inv.Str("invocation_id")] = inv.Str("run_id")
	}
	scopeOfRun := func(runID string) string {
		run, ok := runByID[runID]
		if runID == "" || !ok {
			return "an unidentified run"
		}
		return scopeLabel(run.Str("network_id"), run.Str("business_key"))
	}

	var found []activity
	for _, l := range exact(locks, "NETWORK_LOCK", "RUNNING") {
		if what, at, held := heldLock(l, now); held {
			found = append(found, activity{Scope: scopeOfRun(runOfInv[l.Str("owner_invocation_id")]), What: what, sortAt: at})
		}
	}
	for _, run := range runs {
		at, ok := parsedTime(run.Str("updated_at"))
		if !ok {
			at, ok = parsedTime(run.Str("started_at"))
		}
		if !ok || now.Sub(at) > activityWindow {
			continue
		}
		found = append(found, activity{Scope: scopeLabel(run.Str("network_id"), run.Str("business_key")), What: "RUNNING network run (updated " + age(now, at) + ")", sortAt: at})
	}
	for _, inv := range invs {
		at, ok := parsedTime(inv.Str("started_at"))
		if !ok || now.Sub(at) > activityWindow {
			continue
		}
		found = append(found, activity{Scope: scopeOfRun(inv.Str("run_id")), What: "RUNNING invocation (started " + age(now, at) + ")", sortAt: at})
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].Scope != found[j].Scope {
			return found[i].Scope < found[j].Scope
		}
		return found[i].sortAt.After(found[j].sortAt)
	})
	return found, nil
}

// readRunning reads the RUNNING network locks and runs of the state app and the RUNNING
// invocations of the audit app (none when auditApp is ""); runs and invocations are kept
// only when their record_type and status match exactly.
func readRunning(ctx context.Context, r recordReader, stateApp, auditApp string) (locks, runs, invs []kintoneapi.Record, err error) {
	locks, err = r.GetAll(ctx, stateApp, `record_type in ("NETWORK_LOCK") and status in ("RUNNING")`,
		[]string{"record_type", "status", "lock_key", "owner_invocation_id", "heartbeat_at", "lease_expires_at"})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read NETWORK_LOCK records of the state app: %w", err)
	}
	runs, err = r.GetAll(ctx, stateApp, `record_type in ("NETWORK_RUN") and status in ("RUNNING")`,
		[]string{"record_type", "status", "run_id", "network_id", "business_key", "started_at", "updated_at"})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read NETWORK_RUN records of the state app: %w", err)
	}
	if auditApp != "" {
		invs, err = r.GetAll(ctx, auditApp, `record_type in ("RUN_INVOCATION") and status in ("RUNNING")`,
			[]string{"record_type", "status", "invocation_id", "run_id", "started_at"})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read RUN_INVOCATION records of the audit app: %w", err)
		}
	}
	return locks, exact(runs, "NETWORK_RUN", "RUNNING"), exact(invs, "RUN_INVOCATION", "RUNNING"), nil
}

// heldLock describes a RUNNING network lock at now and the time to sort it by; held is
// false for a released tombstone and for a lease that ran out (a crashed holder, not a runner).
func heldLock(l kintoneapi.Record, now time.Time) (what string, at time.Time, held bool) {
	if l.Str("lock_key") == "" {
		return "", time.Time{}, false // a released tombstone
	}
	what = "held network lock"
	at = now
	if hb, ok := parsedTime(l.Str("heartbeat_at")); ok {
		what += " (heartbeat " + age(now, hb)
		at = hb
	} else {
		what += " (heartbeat unknown"
	}
	exp, ok := parsedTime(l.Str("lease_expires_at"))
	switch {
	case !ok:
		what += ", lease end unreadable: counted as held)"
	case now.After(exp.Add(leaseAllowance)):
		return "", time.Time{}, false // the lease ran out
	default:
		what += fmt.Sprintf(", lease ends in %s)", exp.Add(leaseAllowance).Sub(now).Round(time.Second))
	}
	return what, at, true
}

// describeActivity groups what was found by scope, in one line.
func describeActivity(found []activity) string {
	var parts []string
	for i := 0; i < len(found); {
		j := i
		var whats []string
		for ; j < len(found) && found[j].Scope == found[i].Scope; j++ {
			whats = append(whats, found[j].What)
		}
		parts = append(parts, found[i].Scope+": "+strings.Join(whats, ", "))
		i = j
	}
	return strings.Join(parts, "; ")
}

// tenantActivityCheck reads the E2E state and audit apps (read-only tokens; the writer's
// when no read-only one is set, for a GET only) and refuses when another runner is at work.
func tenantActivityCheck(cfg *config.Config, now time.Time, api *apicount.Counter) safety.Check {
	c := safety.Check{Name: "tenant-activity", Subject: "state and audit apps", OK: true}
	apps := cfg.LiveApps()
	st, ok := apps[safety.RoleState]
	if !ok {
		c.OK, c.Reason = false, "not probed: "+safety.VarAppExec+" is not set"
		return c
	}
	hc, err := TenantHTTP(cfg.Get(config.VarCAFile), api)
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	hc.Timeout = tenantProbeTimeout
	readToken := func(a config.AppSettings) string {
		if a.Read != "" {
			return a.Read
		}
		return a.Full
	}
	tokens := map[string]string{st.ID: readToken(st)}
	audit := ""
	if a, ok := apps[safety.RoleAudit]; ok {
		audit, tokens[a.ID] = a.ID, readToken(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*tenantProbeTimeout)
	defer cancel()
	found, err := findTenantActivity(ctx, kintoneapi.New(cfg.Get(safety.VarBaseURL), hc, tokens), st.ID, audit, now)
	if err != nil {
		c.OK, c.Reason = false, "could not look for another runner on the tenant: "+err.Error()
		return c
	}
	if len(found) > 0 {
		c.OK = false
		c.Reason = fmt.Sprintf("another runner is at work on this tenant, or one stopped within the last %s — %s (ages at kintone's minute precision). "+
			"Wait until it is done: this check passes once no network lock is held and no RUNNING run or invocation "+
			"was updated in the last %s; if it was a run that crashed, sweep what its scope left (state and audit "+
			"records of the runs whose business_key or network_id start with the scope)",
			activityWindow, describeActivity(found), activityWindow)
		return c
	}
	c.Reason = fmt.Sprintf("no held network lock and no RUNNING run or invocation updated in the last %s", activityWindow)
	return c
}
