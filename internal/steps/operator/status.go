package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// statusDomain: the operators' read-only `status` of a network or run: named readings (JSON
// or text), activity, the network lock and its staleness, the recovery identifiers an
// operator copies, and that no lease token is shown. force-unlock-network takes its expected
// owner from the network's last JSON reading (expectedOwner).
type statusDomain struct{}

func (d statusDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator reads the status of the run as (JSON|text) as "([^"]+)"$`, d.readsTheStatus)
	reg.Step(`^the status of the run shows activity "([^"]+)"$`, d.statusShowsActivity)
	reg.Step(`^the status of the run shows no network lock and activity "([^"]+)"$`, d.statusShowsNoLock)
	reg.Step(`^the status of the run by its (run id|business key) shows it "([^"]+)" with no activity$`, d.statusShowsNoActivity)
	reg.Step(`^"([^"]+)" names the network and the run$`, d.textNamesNetworkAndRun)
	reg.Step(`^"([^"]+)" holds no lease token$`, d.holdsNoLeaseToken)
	reg.Step(`^"([^"]+)" names node "([^"]+)" of the run for resolve-node and the run for --resume-run$`, d.namesRecoveryIdentifiers)
	reg.Step(`^"([^"]+)" shows the network lock not stale, owned by the run's invocation, and names it for force-unlock-network$`, d.showsLockNotStale)
	reg.Step(`^the network lock of `+kit.NetRef+` becomes a stale candidate$`, d.lockBecomesStale)
}

// statusState keeps the status readings of the scenario.
type statusState struct {
	readings map[string]*statusReading // by FlowNet call name
	latest   map[string]*statusReading // by network id: the last JSON reading of that network
}

var statusKey = scenario.NewKey[statusState]("status")

func statusesOf(ctx context.Context) *statusState { return statusKey.Of(kit.SceneOf(ctx).St) }

// statusReport is status --json (product-contract §1.4), as far as the steps read it.
type statusReport struct {
	NetworkID string `json:"network_id"`
	Profile   string `json:"profile"`
	Lock      *struct {
		OwnerInvocationID string `json:"owner_invocation_id"`
		StaleCandidate    bool   `json:"stale_candidate"`
	} `json:"lock"`
	Runs []statusRun `json:"runs"`
}

type statusRun struct {
	RunID           string  `json:"run_id"`
	Status          string  `json:"status"`
	Activity        *string `json:"activity"` // absent on terminal Runs
	LifecycleStatus string  `json:"lifecycle_status"`
	Hold            *struct {
		State string `json:"state"`
	} `json:"hold"` // null unless a hold is REQUESTED or ACCEPTED
	RecoveryIdentifiers *struct {
		ResolveNode []struct {
			RunID  string `json:"run_id"`
			NodeID string `json:"node_id"`
		} `json:"resolve_node"`
		ForceUnlockNetwork *struct {
			NetworkID                 string `json:"network_id"`
			Profile                   string `json:"profile"`
			ExpectedOwnerInvocationID string `json:"expected_owner_invocation_id"`
		} `json:"force_unlock_network"`
		RunNetwork struct {
			ResumeRun *string `json:"resume_run"`
		} `json:"run_network"`
	} `json:"recovery_identifiers"`
}

// statusReading is one status call and what it printed.
type statusReading struct {
	Call    *kit.FlownetCall
	network *scope.Rendered
	runID   string        // the run it was asked about (--run-id), or the run the business key selects
	report  *statusReport // nil for text
}

// run is the reading's entry for its run.
func (r *statusReading) run() (*statusRun, error) {
	for i := range r.report.Runs {
		if r.report.Runs[i].RunID == r.runID {
			return &r.report.Runs[i], nil
		}
	}
	return nil, fmt.Errorf("%s lists no run %s", r.Call.Name, r.runID)
}

// statusScope is what a status call asks about: --run-id, --business-key or (neither) the
// whole network.
type statusScope struct{ runID, businessKey string }

// readStatus runs `status <network> --profile <p> [--run-id | --business-key] [--json]`; it
// must exit 0. name may be empty (a generated one).
func readStatus(ctx context.Context, name string, n *scope.Rendered, by statusScope, asJSON bool) (*statusReading, error) {
	sc := kit.SceneOf(ctx)
	args := []string{n.NetworkID, "--profile", sc.Suite.Target.Profile}
	switch {
	case by.runID != "":
		args = append(args, "--run-id", by.runID)
	case by.businessKey != "":
		args = append(args, "--business-key", by.businessKey)
	}
	if asJSON {
		args = append(args, "--json")
	}
	c, err := kit.StartFlowNet(ctx, kit.FlownetSpec{Name: name, Sub: "status", Args: args, Network: n.NetworkID})
	if err != nil {
		return nil, err
	}
	if err := c.Finish(ctx); err != nil {
		return nil, err
	}
	if err := sc.St.On("exit.status").Equal("exit code of "+c.Name, 0, c.Result.ExitCode); err != nil {
		return nil, fmt.Errorf("%w\nstderr: %s", err, c.Stderr)
	}
	r := &statusReading{Call: c, network: n, runID: by.runID}
	if asJSON {
		r.report = &statusReport{}
		if err := json.Unmarshal([]byte(c.Stdout), r.report); err != nil {
			return nil, fmt.Errorf("%s did not print status JSON: %w (%q)", c.Name, err, c.Stdout)
		}
	}
	ops := statusesOf(ctx)
	if ops.readings == nil {
		ops.readings, ops.latest = map[string]*statusReading{}, map[string]*statusReading{}
	}
	ops.readings[c.Name] = r
	if asJSON {
		ops.latest[n.NetworkID] = r
	}
	return r, nil
}

// currentNetworkRun is the current network and the run the scenario is about there.
func currentNetworkRun(ctx context.Context) (*scope.Rendered, string, error) {
	n, err := kit.FixturesOf(ctx).Rendered()
	if err != nil {
		return nil, "", err
	}
	id, err := kit.CurrentRunID(ctx)
	return n, id, err
}

// ReadRunStatus reads the status of the current run as JSON (by --run-id).
func ReadRunStatus(ctx context.Context, name string) (*statusReading, *statusRun, error) {
	n, id, err := currentNetworkRun(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := readStatus(ctx, name, n, statusScope{runID: id}, true)
	if err != nil {
		return nil, nil, err
	}
	run, err := r.run()
	return r, run, err
}

// reading finds a status reading by its call's name.
func reading(ctx context.Context, name string, wantJSON bool) (*statusReading, error) {
	r := statusesOf(ctx).readings[name]
	switch {
	case r == nil:
		return nil, fmt.Errorf("no status was read as %q", name)
	case wantJSON && r.report == nil:
		return nil, fmt.Errorf("%q is the text status; this step reads the JSON one", name)
	}
	return r, nil
}

func derefOr(p *string, none string) string {
	if p == nil {
		return none
	}
	return *p
}

func (statusDomain) readsTheStatus(ctx context.Context, format, name string) error {
	n, id, err := currentNetworkRun(ctx)
	if err != nil {
		return err
	}
	_, err = readStatus(ctx, name, n, statusScope{runID: id}, format == "JSON")
	return err
}

func (statusDomain) statusShowsActivity(ctx context.Context, activity string) error {
	return showsActivity(ctx, false, activity)
}

func (statusDomain) statusShowsNoLock(ctx context.Context, activity string) error {
	return showsActivity(ctx, true, activity)
}

// showsActivity reads the run's status and compares its activity (and, with noLock, that
// the network holds no lock).
func showsActivity(ctx context.Context, noLock bool, activity string) error {
	sc := kit.SceneOf(ctx)
	r, run, err := ReadRunStatus(ctx, "")
	if err != nil {
		return err
	}
	if noLock {
		if err := sc.St.On("output.status.json.lock").Equal("network lock in "+r.Call.Name, "null", lockSummary(r.report)); err != nil {
			return err
		}
	}
	return sc.St.On("output.status.json.runs[].activity").Equal("activity of the run in "+r.Call.Name, activity, derefOr(run.Activity, "(none)"))
}

func lockSummary(rep *statusReport) string {
	if rep.Lock == nil {
		return "null"
	}
	return fmt.Sprintf("owner %s, stale_candidate %t", rep.Lock.OwnerInvocationID, rep.Lock.StaleCandidate)
}

// statusShowsNoActivity reads the status by run id or by the scope's business key; by key, the
// run listed must be the run FlowNet reported.
func (statusDomain) statusShowsNoActivity(ctx context.Context, by, status string) error {
	sc := kit.SceneOf(ctx)
	n, id, err := currentNetworkRun(ctx)
	if err != nil {
		return err
	}
	sel := statusScope{runID: id}
	if by == "business key" {
		sel = statusScope{businessKey: kit.FixturesOf(ctx).Scope().BusinessKey()}
	}
	r, err := readStatus(ctx, "", n, sel, true)
	if err != nil {
		return err
	}
	if by == "business key" {
		if err := sc.St.On("output.status.json.runs[].run_id").Equal("runs listed by "+r.Call.Name, 1, len(r.report.Runs)); err != nil {
			return err
		}
		if err := sc.St.On("output.status.json.runs[].run_id").Equal("run listed by "+r.Call.Name+" against the run FlowNet reported", id, r.report.Runs[0].RunID); err != nil {
			return err
		}
		r.runID = id
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.runs[].status").Equal("status of the run in "+r.Call.Name, status, run.Status); err != nil {
		return err
	}
	return sc.St.On("output.status.json.runs[].activity").Equal("activity of the run in "+r.Call.Name, "(none)", derefOr(run.Activity, "(none)"))
}

// textNamesNetworkAndRun: the text status holds "Network:" and "run_id:" and names the run it
// was asked about, wherever the layout puts them.
func (statusDomain) textNamesNetworkAndRun(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	r, err := reading(ctx, name, false)
	if err != nil {
		return err
	}
	// The text layout is informal (product-contract §12.8); the original required only that
	// the text contains "Network:" and "run_id:" (scenarios.md §2.2.5), and the run it names.
	out := r.Call.Stdout
	for _, want := range []string{"Network:", "run_id:", r.runID} {
		if err := sc.St.On("harness.status.text").Assert(fmt.Sprintf("%q in the text of %s", want, name), "present", presenceIn(out, want), strings.Contains(out, want)); err != nil {
			return err
		}
	}
	return nil
}

// holdsNoLeaseToken: neither the key nor the held lock's token appears in the output.
func (statusDomain) holdsNoLeaseToken(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	r, err := reading(ctx, name, false)
	if err != nil {
		return err
	}
	out := r.Call.Stdout
	if err := sc.St.On("harness.status.text").Assert(`"lease_token" in the output of `+name, "absent", presenceIn(out, "lease_token"), !strings.Contains(out, "lease_token")); err != nil {
		return err
	}
	lock, err := heldLock(ctx, r.network)
	if err != nil || lock == nil {
		return err
	}
	return sc.St.On("harness.status.text").Assert("the held lock's lease token in the output of "+name, "absent", presenceIn(out, lock.LeaseToken),
		lock.LeaseToken == "" || !strings.Contains(out, lock.LeaseToken))
}

func presenceIn(text, s string) string {
	if s != "" && strings.Contains(text, s) {
		return "present"
	}
	return "absent"
}

// heldLock reads the network's held NETWORK_LOCK (nil when there is none).
func heldLock(ctx context.Context, n *scope.Rendered) (*kit.NetworkLock, error) {
	sc := kit.SceneOf(ctx)
	n1, err := kit.CanonicalKey("N1", sc.Suite.Target.Profile, n.NetworkID)
	if err != nil {
		return nil, err
	}
	locks, err := kit.ReadExact(ctx, sc, target.RoleState, kit.DecodeNetworkLock, kit.FieldIs("record_type", "NETWORK_LOCK"), kit.FieldIs("lock_key", n1))
	if err != nil {
		return nil, err
	}
	switch len(locks) {
	case 0:
		return nil, nil
	case 1:
		return &locks[0], nil
	}
	return nil, fmt.Errorf("%d NETWORK_LOCK records hold lock_key %s", len(locks), n1)
}

func (statusDomain) namesRecoveryIdentifiers(ctx context.Context, name, node string) error {
	sc := kit.SceneOf(ctx)
	r, err := reading(ctx, name, true)
	if err != nil {
		return err
	}
	nd, err := kit.FixturesOf(ctx).Node(node)
	if err != nil {
		return err
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	ri := run.RecoveryIdentifiers
	if err := sc.St.On("output.status.json.runs[].recovery_identifiers.run_network.resume_run").Equal("recovery_identifiers in "+name, "present", kit.Presence(ri != nil)); err != nil {
		return err
	}
	var listed []string
	found := false
	for _, rn := range ri.ResolveNode {
		listed = append(listed, rn.RunID+"/"+kit.FixturesOf(ctx).FixtureName(rn.NodeID))
		found = found || (rn.RunID == r.runID && rn.NodeID == nd.ID)
	}
	if err := sc.St.On("output.status.json.runs[].recovery_identifiers.resolve_node[].run_id", "output.status.json.runs[].recovery_identifiers.resolve_node[].node_id").Assert("recovery_identifiers.resolve_node in "+name, "includes "+r.runID+"/"+node, kit.OrNone(strings.Join(listed, ", ")), found); err != nil {
		return err
	}
	return sc.St.On("output.status.json.runs[].recovery_identifiers.run_network.resume_run").Equal("recovery_identifiers.run_network.resume_run in "+name, r.runID, derefOr(ri.RunNetwork.ResumeRun, "(none)"))
}

// runningInvocation is the invocation id of the network's run that is still RUNNING: the
// FlowNet process that holds (or held until it was killed) the network lock.
func runningInvocation(ctx context.Context, n *scope.Rendered) (string, error) {
	runs, err := kit.RunsOfNetwork(ctx, n.NetworkID)
	if err != nil {
		return "", err
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("network %s has %d runs for the business key (need one)", n.NetworkID, len(runs))
	}
	invs, err := kit.ReadExact(ctx, kit.SceneOf(ctx), target.RoleAudit, kit.DecodeRunInvocation, kit.FieldIs("record_type", "RUN_INVOCATION"), kit.FieldIs("run_id", runs[0].RunID))
	if err != nil {
		return "", err
	}
	var running []string
	for _, inv := range invs {
		if inv.Status == "RUNNING" {
			running = append(running, inv.InvocationID)
		}
	}
	if len(running) != 1 {
		return "", fmt.Errorf("run %s has %d RUNNING invocations (need one): %v", runs[0].RunID, len(running), running)
	}
	return running[0], nil
}

// checkLock compares a status reading's lock with the network's RUNNING invocation and the
// expected staleness; with a run entry, its force_unlock_network identifiers too.
func checkLock(ctx context.Context, r *statusReading, stale bool) error {
	sc := kit.SceneOf(ctx)
	owner, err := runningInvocation(ctx, r.network)
	if err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.lock").Equal("network lock in "+r.Call.Name, "present", kit.Presence(r.report.Lock != nil)); err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.lock.stale_candidate").Equal("stale_candidate of the network lock in "+r.Call.Name, fmt.Sprint(stale), fmt.Sprint(r.report.Lock.StaleCandidate)); err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.lock.owner_invocation_id").Equal("owner of the network lock in "+r.Call.Name+" against the run's RUNNING invocation", owner, r.report.Lock.OwnerInvocationID); err != nil {
		return err
	}
	if r.runID == "" {
		return nil
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	if err := sc.St.On("output.status.json.runs[].recovery_identifiers.force_unlock_network.network_id").Equal("recovery_identifiers.force_unlock_network in "+r.Call.Name, "present",
		kit.Presence(run.RecoveryIdentifiers != nil && run.RecoveryIdentifiers.ForceUnlockNetwork != nil)); err != nil {
		return err
	}
	fu := run.RecoveryIdentifiers.ForceUnlockNetwork
	checks := []struct{ what, want, seen string }{
		{"network_id", r.network.NetworkID, fu.NetworkID},
		{"profile", r.Call.ArgAfter("--profile"), fu.Profile},
		{"expected_owner_invocation_id", owner, fu.ExpectedOwnerInvocationID},
	}
	for _, c := range checks {
		if err := sc.St.On("output.status.json.runs[].recovery_identifiers.force_unlock_network."+c.what).Equal("force_unlock_network."+c.what+" in "+r.Call.Name, c.want, c.seen); err != nil {
			return err
		}
	}
	return nil
}

func (statusDomain) showsLockNotStale(ctx context.Context, name string) error {
	r, err := reading(ctx, name, true)
	if err != nil {
		return err
	}
	return checkLock(ctx, r, false)
}

// lockBecomesStale waits on the lock record until FlowNet's own rule calls it a stale
// candidate (now > lease_expires_at + 60 s, §1.4), then reads the status, which must say so
// for the same owner.
func (statusDomain) lockBecomesStale(ctx context.Context, ref string) error {
	fx := kit.FixturesOf(ctx)
	n, err := fx.NetworkOf(ref)
	if err != nil {
		return err
	}
	err = wait.For(ctx, wait.LeaseExpiry, "the network lock of "+n.NetworkID+" to be a stale candidate (lease_expires_at + 60 s)",
		func(ctx context.Context) (bool, string, error) {
			lock, err := heldLock(ctx, n)
			if err != nil {
				return false, "", err
			}
			if lock == nil {
				return false, "", wait.Permanent(fmt.Errorf("network %s holds no lock any more", n.NetworkID))
			}
			exp, err := time.Parse(time.RFC3339Nano, lock.LeaseExpiresAt)
			if err != nil {
				return false, "", fmt.Errorf("lease_expires_at %q: %w", lock.LeaseExpiresAt, err)
			}
			staleAt := exp.Add(staleAllowance)
			return time.Now().After(staleAt), fmt.Sprintf("lease_expires_at %s, stale after %s (%s to go)",
				lock.LeaseExpiresAt, staleAt.UTC().Format(time.RFC3339), time.Until(staleAt).Round(time.Second)), nil
		})
	if err != nil {
		return err
	}
	by := statusScope{}
	if ref == "the run" {
		if by.runID, err = kit.CurrentRunID(ctx); err != nil {
			return err
		}
	}
	r, err := readStatus(ctx, "", n, by, true)
	if err != nil {
		return err
	}
	return checkLock(ctx, r, true)
}

// staleAllowance is kintone's DATETIME allowance every liveness rule of FlowNet adds (§3.8).
const staleAllowance = 60 * time.Second

// expectedOwner is the owner the operator copies from the network's last status reading:
// its force_unlock_network identifiers, else its lock.
func (s *statusState) expectedOwner(n *scope.Rendered) (string, error) {
	r := s.latest[n.NetworkID]
	if r == nil || r.report.Lock == nil {
		return "", fmt.Errorf("no status of network %s showing its lock was read first", n.NetworkID)
	}
	if run, err := r.run(); err == nil && run.RecoveryIdentifiers != nil && run.RecoveryIdentifiers.ForceUnlockNetwork != nil {
		return run.RecoveryIdentifiers.ForceUnlockNetwork.ExpectedOwnerInvocationID, nil
	}
	return r.report.Lock.OwnerInvocationID, nil
}
