package steps

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
)

// operatorDomain: the operators' commands — status (read-only), cancel-run (hold and
// release), force-unlock-network (a stale Network lock whose owner stopped) and resolve-node
// (an UNKNOWN or non-idempotent node, with evidence and an approver) — and how a refusal
// looks. Every command starts through the one FlowNet command runner; reason files travel
// as its Files, the evidence reference is this scenario's record in the archive, and the
// operator, approver and requester are the scope's KSQL_FLOW_TEST_ principals.
type operatorDomain struct{}

func (d operatorDomain) register(reg stepdef.Registry) {
	// status
	reg.Step(`^the operator reads the status of the run as (JSON|text) as "([^"]+)"$`, d.readsTheStatus)
	reg.Step(`^the status of the run shows activity "([^"]+)"$`, d.statusShowsActivity)
	reg.Step(`^the status of the run shows no network lock and activity "([^"]+)"$`, d.statusShowsNoLock)
	reg.Step(`^the status of the run by its (run id|business key) shows it "([^"]+)" with no activity$`, d.statusShowsNoActivity)
	reg.Step(`^"([^"]+)" names the network and the run$`, d.textNamesNetworkAndRun)
	reg.Step(`^"([^"]+)" holds no lease token$`, d.holdsNoLeaseToken)
	reg.Step(`^"([^"]+)" names node "([^"]+)" of the run for resolve-node and the run for --resume-run$`, d.namesRecoveryIdentifiers)
	reg.Step(`^"([^"]+)" shows the network lock not stale, owned by the run's invocation, and names it for force-unlock-network$`, d.showsLockNotStale)
	reg.Step(`^the network lock of `+netRef+` becomes a stale candidate$`, d.lockBecomesStale)
	// hold
	reg.Step(`^the operator requests a stop of the run as "([^"]+)"$`, d.requestsAStop)
	reg.Step(`^the operator releases the hold of the run as "([^"]+)"$`, d.releasesTheHold)
	// force-unlock-network
	reg.Step(`^the operator force-unlocks the network lock of `+netRef+`, confirming the stop by "([^"]+)", as "([^"]+)"$`, d.forceUnlocks)
	reg.Step(`^the operator force-unlocks the network lock of the run for a wrong owner as "([^"]+)"$`, d.forceUnlocksForAWrongOwner)
	reg.Step(`^the operator force-unlocks the network lock of a network that has none as "([^"]+)"$`, d.forceUnlocksAMissingLock)
	reg.Step(`^exactly one NETWORK_LOCK_FORCE_RELEASED audit of the network records what "([^"]+)" was given$`, d.forceReleaseIsAudited)
	reg.Step(`^no force-unlock-network call of this scenario connected outside the machine$`, d.noOutboundConnection)
	// resolve-node
	reg.Step(`^the operator resolves node "([^"]+)" to SUCCESS by manual completion as "([^"]+)"$`, d.resolvesByManualCompletion)
	reg.Step(`^the operator resolves node "([^"]+)" to SUCCESS by manual completion approved by (the requester|"[^"]+") as "([^"]+)"$`, d.resolvesApproved)
	reg.Step(`^exactly one ATTEMPT_RESOLUTION of node "([^"]+)" records what "([^"]+)" was given$`, d.resolutionIsAudited)
	// refusals
	reg.Step(`^`+procRef+` is refused with "([A-Z_]+)"$`, d.isRefused)
	reg.Step(`^`+procRef+` is refused with "([A-Z_]+)" saying "([^"]+)"$`, d.isRefusedSaying)
	reg.Step(`^the stderr of `+procRef+` does not mention "([^"]+)"$`, d.stderrDoesNotMention)
}

// operatorState keeps the status readings and the outbound-connection trap.
type operatorState struct {
	readings map[string]*statusReading // by FlowNet call name
	latest   map[string]*statusReading // by network id: the last JSON reading of that network
	trap     *outboundTrap
}

var operatorKey = scenario.NewKey[operatorState]("operators")

func operatorsOf(ctx context.Context) *operatorState { return operatorKey.Of(sceneOf(ctx).st) }

// ---- status ----

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
	call    *flownetCall
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
	return nil, fmt.Errorf("%s lists no run %s", r.call.name, r.runID)
}

// statusScope is what a status call asks about: --run-id, --business-key or (neither) the
// whole network.
type statusScope struct{ runID, businessKey string }

// readStatus runs `status <network> --profile <p> [--run-id | --business-key] [--json]`; it
// must exit 0. name may be empty (a generated one).
func readStatus(ctx context.Context, name string, n *scope.Rendered, by statusScope, asJSON bool) (*statusReading, error) {
	sc := sceneOf(ctx)
	args := []string{n.NetworkID, "--profile", sc.suite.Target.Profile}
	switch {
	case by.runID != "":
		args = append(args, "--run-id", by.runID)
	case by.businessKey != "":
		args = append(args, "--business-key", by.businessKey)
	}
	if asJSON {
		args = append(args, "--json")
	}
	c, err := startFlowNet(ctx, flownetSpec{Name: name, Sub: "status", Args: args, Network: n.NetworkID})
	if err != nil {
		return nil, err
	}
	if err := c.finish(ctx); err != nil {
		return nil, err
	}
	if err := sc.st.Equal("exit code of "+c.name, 0, c.result.ExitCode); err != nil {
		return nil, fmt.Errorf("%w\nstderr: %s", err, c.stderr)
	}
	r := &statusReading{call: c, network: n, runID: by.runID}
	if asJSON {
		r.report = &statusReport{}
		if err := json.Unmarshal([]byte(c.stdout), r.report); err != nil {
			return nil, fmt.Errorf("%s did not print status JSON: %w (%q)", c.name, err, c.stdout)
		}
	}
	ops := operatorsOf(ctx)
	if ops.readings == nil {
		ops.readings, ops.latest = map[string]*statusReading{}, map[string]*statusReading{}
	}
	ops.readings[c.name] = r
	if asJSON {
		ops.latest[n.NetworkID] = r
	}
	return r, nil
}

// currentNetworkRun is the current network and the run the scenario is about there.
func currentNetworkRun(ctx context.Context) (*scope.Rendered, string, error) {
	n, err := fixturesOf(ctx).rendered()
	if err != nil {
		return nil, "", err
	}
	id, err := currentRunID(ctx)
	return n, id, err
}

// readRunStatus reads the status of the current run as JSON (by --run-id).
func readRunStatus(ctx context.Context, name string) (*statusReading, *statusRun, error) {
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
	r := operatorsOf(ctx).readings[name]
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

func (operatorDomain) readsTheStatus(ctx context.Context, format, name string) error {
	n, id, err := currentNetworkRun(ctx)
	if err != nil {
		return err
	}
	_, err = readStatus(ctx, name, n, statusScope{runID: id}, format == "JSON")
	return err
}

func (operatorDomain) statusShowsActivity(ctx context.Context, activity string) error {
	return showsActivity(ctx, false, activity)
}

func (operatorDomain) statusShowsNoLock(ctx context.Context, activity string) error {
	return showsActivity(ctx, true, activity)
}

// showsActivity reads the run's status and compares its activity (and, with noLock, that
// the network holds no lock).
func showsActivity(ctx context.Context, noLock bool, activity string) error {
	sc := sceneOf(ctx)
	r, run, err := readRunStatus(ctx, "")
	if err != nil {
		return err
	}
	if noLock {
		if err := sc.st.Equal("network lock in "+r.call.name, "null", lockSummary(r.report)); err != nil {
			return err
		}
	}
	return sc.st.Equal("activity of the run in "+r.call.name, activity, derefOr(run.Activity, "(none)"))
}

func lockSummary(rep *statusReport) string {
	if rep.Lock == nil {
		return "null"
	}
	return fmt.Sprintf("owner %s, stale_candidate %t", rep.Lock.OwnerInvocationID, rep.Lock.StaleCandidate)
}

// statusShowsNoActivity reads the status by run id or by the scope's business key; by key, the
// run listed must be the run FlowNet reported.
func (operatorDomain) statusShowsNoActivity(ctx context.Context, by, status string) error {
	sc := sceneOf(ctx)
	n, id, err := currentNetworkRun(ctx)
	if err != nil {
		return err
	}
	sel := statusScope{runID: id}
	if by == "business key" {
		sel = statusScope{businessKey: fixturesOf(ctx).scope().BusinessKey()}
	}
	r, err := readStatus(ctx, "", n, sel, true)
	if err != nil {
		return err
	}
	if by == "business key" {
		if err := sc.st.Equal("runs listed by "+r.call.name, 1, len(r.report.Runs)); err != nil {
			return err
		}
		if err := sc.st.Equal("run listed by "+r.call.name+" against the run FlowNet reported", id, r.report.Runs[0].RunID); err != nil {
			return err
		}
		r.runID = id
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	if err := sc.st.Equal("status of the run in "+r.call.name, status, run.Status); err != nil {
		return err
	}
	return sc.st.Equal("activity of the run in "+r.call.name, "(none)", derefOr(run.Activity, "(none)"))
}

// textNamesNetworkAndRun: the text status has a "Network: <network_id>" line and a
// "run_id: <run id>" line naming what it was asked about.
func (operatorDomain) textNamesNetworkAndRun(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	r, err := reading(ctx, name, false)
	if err != nil {
		return err
	}
	want := map[string]string{"Network:": "Network: " + r.network.NetworkID, "run_id:": "run_id: " + r.runID}
	for _, prefix := range []string{"Network:", "run_id:"} {
		found := ""
		for _, line := range strings.Split(r.call.stdout, "\n") {
			if l := strings.TrimPrefix(strings.TrimSpace(line), "- "); strings.HasPrefix(l, prefix) {
				found = l
				break
			}
		}
		if err := sc.st.Equal(fmt.Sprintf("%q line of %s", prefix, name), want[prefix], orNone(found)); err != nil {
			return err
		}
	}
	return nil
}

// holdsNoLeaseToken: neither the key nor the held lock's token appears in the output.
func (operatorDomain) holdsNoLeaseToken(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	r, err := reading(ctx, name, false)
	if err != nil {
		return err
	}
	out := r.call.stdout
	if err := sc.st.Assert(`"lease_token" in the output of `+name, "absent", presenceIn(out, "lease_token"), !strings.Contains(out, "lease_token")); err != nil {
		return err
	}
	lock, err := heldLock(ctx, r.network)
	if err != nil || lock == nil {
		return err
	}
	return sc.st.Assert("the held lock's lease token in the output of "+name, "absent", presenceIn(out, lock.LeaseToken),
		lock.LeaseToken == "" || !strings.Contains(out, lock.LeaseToken))
}

func presenceIn(text, s string) string {
	if s != "" && strings.Contains(text, s) {
		return "present"
	}
	return "absent"
}

// heldLock reads the network's held NETWORK_LOCK (nil when there is none).
func heldLock(ctx context.Context, n *scope.Rendered) (*networkLock, error) {
	sc := sceneOf(ctx)
	n1, err := canonicalKey("N1", sc.suite.Target.Profile, n.NetworkID)
	if err != nil {
		return nil, err
	}
	locks, err := readExact(ctx, sc, target.RoleState, decodeNetworkLock, match{"record_type", "NETWORK_LOCK"}, match{"lock_key", n1})
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

func (operatorDomain) namesRecoveryIdentifiers(ctx context.Context, name, node string) error {
	sc := sceneOf(ctx)
	r, err := reading(ctx, name, true)
	if err != nil {
		return err
	}
	nd, err := fixturesOf(ctx).node(node)
	if err != nil {
		return err
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	ri := run.RecoveryIdentifiers
	if err := sc.st.Equal("recovery_identifiers in "+name, "present", presence(ri != nil)); err != nil {
		return err
	}
	var listed []string
	found := false
	for _, rn := range ri.ResolveNode {
		listed = append(listed, rn.RunID+"/"+fixturesOf(ctx).fixtureName(rn.NodeID))
		found = found || (rn.RunID == r.runID && rn.NodeID == nd.ID)
	}
	if err := sc.st.Assert("recovery_identifiers.resolve_node in "+name, "includes "+r.runID+"/"+node, orNone(strings.Join(listed, ", ")), found); err != nil {
		return err
	}
	return sc.st.Equal("recovery_identifiers.run_network.resume_run in "+name, r.runID, derefOr(ri.RunNetwork.ResumeRun, "(none)"))
}

// runningInvocation is the invocation id of the network's run that is still RUNNING: the
// FlowNet process that holds (or held until it was killed) the network lock.
func runningInvocation(ctx context.Context, n *scope.Rendered) (string, error) {
	runs, err := runsOfNetwork(ctx, n.NetworkID)
	if err != nil {
		return "", err
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("network %s has %d runs for the business key (need one)", n.NetworkID, len(runs))
	}
	invs, err := readExact(ctx, sceneOf(ctx), target.RoleAudit, decodeRunInvocation, match{"record_type", "RUN_INVOCATION"}, match{"run_id", runs[0].RunID})
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
	sc := sceneOf(ctx)
	owner, err := runningInvocation(ctx, r.network)
	if err != nil {
		return err
	}
	if err := sc.st.Equal("network lock in "+r.call.name, "present", presence(r.report.Lock != nil)); err != nil {
		return err
	}
	if err := sc.st.Equal("stale_candidate of the network lock in "+r.call.name, fmt.Sprint(stale), fmt.Sprint(r.report.Lock.StaleCandidate)); err != nil {
		return err
	}
	if err := sc.st.Equal("owner of the network lock in "+r.call.name+" against the run's RUNNING invocation", owner, r.report.Lock.OwnerInvocationID); err != nil {
		return err
	}
	if r.runID == "" {
		return nil
	}
	run, err := r.run()
	if err != nil {
		return err
	}
	if err := sc.st.Equal("recovery_identifiers.force_unlock_network in "+r.call.name, "present",
		presence(run.RecoveryIdentifiers != nil && run.RecoveryIdentifiers.ForceUnlockNetwork != nil)); err != nil {
		return err
	}
	fu := run.RecoveryIdentifiers.ForceUnlockNetwork
	checks := []struct{ what, want, seen string }{
		{"network_id", r.network.NetworkID, fu.NetworkID},
		{"profile", r.call.argAfter("--profile"), fu.Profile},
		{"expected_owner_invocation_id", owner, fu.ExpectedOwnerInvocationID},
	}
	for _, c := range checks {
		if err := sc.st.Equal("force_unlock_network."+c.what+" in "+r.call.name, c.want, c.seen); err != nil {
			return err
		}
	}
	return nil
}

func (operatorDomain) showsLockNotStale(ctx context.Context, name string) error {
	r, err := reading(ctx, name, true)
	if err != nil {
		return err
	}
	return checkLock(ctx, r, false)
}

// lockBecomesStale waits on the lock record until FlowNet's own rule calls it a stale
// candidate (now > lease_expires_at + 60 s, §1.4), then reads the status, which must say so
// for the same owner.
func (operatorDomain) lockBecomesStale(ctx context.Context, ref string) error {
	fx := fixturesOf(ctx)
	n, err := fx.networkOf(ref)
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
		if by.runID, err = currentRunID(ctx); err != nil {
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

// ---- hold ----

func cancelRun(ctx context.Context, name string, release bool) error {
	id, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	args := []string{"--run-id", id, "--reason-file", "@reason"}
	text := "stop requested by " + sceneOf(ctx).st.ID
	if release {
		args = append(args, "--release")
		text = "hold released by " + sceneOf(ctx).st.ID
	}
	c, err := startFlowNet(ctx, flownetSpec{Name: name, Sub: "cancel-run", Args: args,
		Files: map[string]string{"reason": fixturesOf(ctx).scope().Reason(text)}})
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

func (operatorDomain) requestsAStop(ctx context.Context, name string) error {
	return cancelRun(ctx, name, false)
}

func (operatorDomain) releasesTheHold(ctx context.Context, name string) error {
	return cancelRun(ctx, name, true)
}

// ---- force-unlock-network ----

// expectedOwner is the owner the operator copies from the network's last status reading:
// its force_unlock_network identifiers, else its lock.
func expectedOwner(ctx context.Context, n *scope.Rendered) (string, error) {
	r := operatorsOf(ctx).latest[n.NetworkID]
	if r == nil || r.report.Lock == nil {
		return "", fmt.Errorf("no status of network %s showing its lock was read first", n.NetworkID)
	}
	if run, err := r.run(); err == nil && run.RecoveryIdentifiers != nil && run.RecoveryIdentifiers.ForceUnlockNetwork != nil {
		return run.RecoveryIdentifiers.ForceUnlockNetwork.ExpectedOwnerInvocationID, nil
	}
	return r.report.Lock.OwnerInvocationID, nil
}

// forceUnlock runs force-unlock-network for n with every argument the product requires:
// the scenario's operator confirms the stop, this scenario's record is the evidence, and no
// GCP access token is configured. Its outbound connections go to the trap.
func forceUnlock(ctx context.Context, name string, n *scope.Rendered, owner, method string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	operator, err := fx.principal(sc, "operator")
	if err != nil {
		return err
	}
	trap, err := operatorsOf(ctx).outboundTrap(sc)
	if err != nil {
		return err
	}
	ref := evidenceRef(sc)
	c, err := startFlowNet(ctx, flownetSpec{Name: name, Sub: "force-unlock-network", Network: n.NetworkID,
		Args: []string{n.NetworkID, "--profile", sc.suite.Target.Profile, "--expected-owner-invocation-id", owner,
			"--reason-file", "@reason", "--evidence-ref", ref, "--stop-confirmed-by", operator,
			"--stop-evidence-ref", ref + "#stop-confirmation", "--stop-method", method},
		Files: map[string]string{"reason": fx.scope().Reason("force-unlock of " + n.NetworkID + " after its owner was stopped")},
		Env:   append(trap.env(sc), "KSQL_FLOWNET_GCP_ACCESS_TOKEN="),
	})
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

func (operatorDomain) forceUnlocks(ctx context.Context, ref, method, name string) error {
	n, err := fixturesOf(ctx).networkOf(ref)
	if err != nil {
		return err
	}
	owner, err := expectedOwner(ctx, n)
	if err != nil {
		return err
	}
	return forceUnlock(ctx, name, n, owner, method)
}

// forceUnlocksAMissingLock: force-unlock-network of <scope>_missing, a network of this scope
// that never ran, so it holds no lock (m7-03's third phase: expected LOCK_NOT_FOUND).
func (operatorDomain) forceUnlocksAMissingLock(ctx context.Context, name string) error {
	fx := fixturesOf(ctx)
	n := &scope.Rendered{NetworkID: fx.scope().NetworkID("missing"), FixtureNetworkID: "missing"}
	return forceUnlock(ctx, name, n, "no_owner", "local_pid")
}

func (operatorDomain) forceUnlocksForAWrongOwner(ctx context.Context, name string) error {
	n, err := fixturesOf(ctx).rendered()
	if err != nil {
		return err
	}
	owner, err := expectedOwner(ctx, n)
	if err != nil {
		return err
	}
	return forceUnlock(ctx, name, n, owner+"_wrong", "local_pid")
}

// reasonGiven is the reason file content a call received.
func reasonGiven(c *flownetCall) (string, error) {
	b, err := os.ReadFile(c.argAfter("--reason-file"))
	if err != nil {
		return "", fmt.Errorf("reason file of %s: %w", c.name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// forceReleaseIsAudited compares the one NETWORK_LOCK_FORCE_RELEASED audit of the call's
// network with what the call received (argv, environment, reason file) and the lock record
// it released, and the RELEASED: line with both.
func (operatorDomain) forceReleaseIsAudited(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	calls, err := finishedCalls(ctx, name)
	if err != nil {
		return err
	}
	c := calls[0]
	network := c.subArg(0)
	audits, err := readExact(ctx, sc, target.RoleAudit, decodeOperationAudit, match{"record_type", "OPERATION_AUDIT"}, match{"result_code", "NETWORK_LOCK_FORCE_RELEASED"})
	if err != nil {
		return err
	}
	var mine []operationAudit
	for _, a := range audits {
		if a.Event["network_id"] == network {
			mine = append(mine, a)
		}
	}
	if err := sc.st.Equal("NETWORK_LOCK_FORCE_RELEASED audits naming network "+network, 1, len(mine)); err != nil {
		return err
	}
	a := mine[0]
	reason, err := reasonGiven(c)
	if err != nil {
		return err
	}
	profile := c.argAfter("--profile")
	lockKey, err := canonicalKey("N1", profile, network)
	if err != nil {
		return err
	}
	want := []struct{ field, value string }{
		{"event_type", "NETWORK_LOCK_FORCE_RELEASED"},
		{"network_id", network},
		{"profile", profile},
		{"lock_key", lockKey},
		{"previous_owner_invocation_id", c.argAfter("--expected-owner-invocation-id")},
		{"service_principal", c.envValue("KSQL_FLOWNET_SERVICE_PRINCIPAL")},
		{"requested_by", c.envValue("KSQL_FLOWNET_REQUESTED_BY")},
		{"stop_confirmed_by", c.argAfter("--stop-confirmed-by")},
		{"stop_method", c.argAfter("--stop-method")},
		{"stop_evidence_ref", c.argAfter("--stop-evidence-ref")},
		{"evidence_ref", c.argAfter("--evidence-ref")},
		{"reason", reason},
	}
	for _, w := range want {
		if err := sc.st.Equal(w.field+" of the force-release audit against what "+name+" was given", w.value, orNone(str(a.Event[w.field]))); err != nil {
			return err
		}
	}
	post, isNumber := a.Event["post_release_revision"].(float64)
	if err := sc.st.Assert("post_release_revision of the force-release audit", "an integer", fmt.Sprint(a.Event["post_release_revision"]),
		isNumber && post == math.Trunc(post)); err != nil {
		return err
	}
	recordID := str(a.Event["record_id"])
	locks, err := readExact(ctx, sc, target.RoleState, decodeNetworkLock, match{"$id", recordID})
	if err != nil {
		return err
	}
	if err := sc.st.Equal("lock records with the audit's record_id "+orNone(recordID), 1, len(locks)); err != nil {
		return err
	}
	tomb := locks[0]
	for _, ch := range []struct{ what, want, seen string }{
		{"post_release_revision of the force-release audit against the released lock's $revision", tomb.Revision, fmt.Sprint(int64(post))},
		{"status of the released lock record", "CANCELLED", tomb.Status},
		{"status_reason of the released lock record", "NETWORK_LOCK_FORCE_RELEASED", tomb.StatusReason},
		{"lock_key of the released lock record", "(none)", orNone(tomb.LockKey)},
		{"previous_heartbeat_at of the force-release audit against the released lock's heartbeat_at (minute)", minuteOf(tomb.HeartbeatAt), minuteOf(str(a.Event["previous_heartbeat_at"]))},
		{"previous_lease_expires_at of the force-release audit against the released lock's lease_expires_at (minute)", minuteOf(tomb.LeaseExpiresAt), minuteOf(str(a.Event["previous_lease_expires_at"]))},
		{"previous_lease_token of the force-release audit", "present", presence(str(a.Event["previous_lease_token"]) != "")},
		{"released_at of the force-release audit", "present", presence(str(a.Event["released_at"]) != "")},
		{"RELEASED: line of " + name, fmt.Sprintf("RELEASED: %s (previous owner %s, post revision %s).", lockKey, c.argAfter("--expected-owner-invocation-id"), tomb.Revision),
			firstLine(c.stdout)},
	} {
		if err := sc.st.Equal(ch.what, ch.want, ch.seen); err != nil {
			return err
		}
	}
	return nil
}

// str is v when it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return orNone(strings.TrimSpace(line))
}

func (operatorDomain) noOutboundConnection(ctx context.Context) error {
	sc := sceneOf(ctx)
	t := operatorsOf(ctx).trap
	if t == nil {
		return fmt.Errorf("no force-unlock-network call was made in this scenario")
	}
	n, seen := t.count()
	if n > 0 {
		sc.st.Note("connections trapped", strings.Join(seen, "; "))
	}
	return sc.st.Equal("connections of force-unlock-network calls to hosts other than kintone (trapped by their proxy)", 0, n)
}

// outboundTrap is a local proxy that answers nothing: force-unlock-network calls get it as
// HTTPS_PROXY/HTTP_PROXY (NO_PROXY: kintone's host and loopback), so a connection to anywhere
// else — the Cloud Run Admin API — lands here and is counted instead of leaving the machine.
// Go and Node (NODE_USE_ENV_PROXY) clients honour these variables.
type outboundTrap struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string // each connection's first line (CONNECT host:port …)
}

func (s *operatorState) outboundTrap(sc *scene) (*outboundTrap, error) {
	if s.trap != nil {
		return s.trap, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("outbound-connection trap: %w", err)
	}
	t := &outboundTrap{ln: ln}
	go t.serve()
	sc.st.Defer("close the outbound-connection trap", func(context.Context) error { return ln.Close() })
	s.trap = t
	return t, nil
}

func (t *outboundTrap) serve() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			t.mu.Lock()
			t.lines = append(t.lines, strings.TrimSpace(line))
			t.mu.Unlock()
			_, _ = c.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		}()
	}
}

func (t *outboundTrap) count() (int, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lines), append([]string(nil), t.lines...)
}

func (t *outboundTrap) env(sc *scene) []string {
	proxy := "http://" + t.ln.Addr().String()
	noProxy := "localhost,127.0.0.1,::1"
	if u, err := url.Parse(sc.suite.Target.BaseURL); err == nil && u.Hostname() != "" {
		noProxy += "," + u.Hostname()
	}
	return []string{"HTTPS_PROXY=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy, "NODE_USE_ENV_PROXY=1"}
}

// ---- resolve-node ----

// resolve runs resolve-node for a fixture node of the current run: SUCCESS by manual
// completion, the scenario's operator confirming the stop, this scenario's record as the
// evidence, and approver when not empty.
func resolve(ctx context.Context, name, node, approver string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	nd, err := fx.node(node)
	if err != nil {
		return err
	}
	id, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	operator, err := fx.principal(sc, "operator")
	if err != nil {
		return err
	}
	ref := evidenceRef(sc)
	args := []string{"--run-id", id, "--node-id", nd.ID, "--to", "SUCCESS", "--manual-completion",
		"--reason-file", "@reason", "--evidence-ref", ref, "--stop-confirmed-by", operator, "--stop-evidence-ref", ref + "#stop-confirmation"}
	if approver != "" {
		args = append(args, "--approved-by", approver)
	}
	c, err := startFlowNet(ctx, flownetSpec{Name: name, Sub: "resolve-node", Args: args,
		Files: map[string]string{"reason": fx.scope().Reason("manual completion of " + node + " confirmed")}})
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

func (operatorDomain) resolvesByManualCompletion(ctx context.Context, node, name string) error {
	return resolve(ctx, name, node, "")
}

// resolvesApproved: "the requester" approves what they requested (the principal every
// FlowNet call of the scope runs as); a quoted name is another principal of the scope.
func (operatorDomain) resolvesApproved(ctx context.Context, node, approver, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	who := fx.scope().Principal("requester")
	if approver != "the requester" {
		var err error
		if who, err = fx.principal(sc, strings.Trim(approver, `"`)); err != nil {
			return err
		}
	}
	return resolve(ctx, name, node, who)
}

// resolutionIsAudited compares the one ATTEMPT_RESOLUTION of the node's latest attempt with
// what the resolve-node call received.
func (operatorDomain) resolutionIsAudited(ctx context.Context, node, name string) error {
	sc := sceneOf(ctx)
	calls, err := finishedCalls(ctx, name)
	if err != nil {
		return err
	}
	c := calls[0]
	nd, err := fixturesOf(ctx).node(node)
	if err != nil {
		return err
	}
	atts, err := attemptsOf(ctx, nd.ID)
	if err != nil {
		return err
	}
	if err := sc.st.Assert("attempts of node "+node, ">= 1", len(atts), len(atts) >= 1); err != nil {
		return err
	}
	latest := atts[len(atts)-1]
	res, err := readExact(ctx, sc, target.RoleAudit, decodeAttemptResolution, match{"record_type", "ATTEMPT_RESOLUTION"}, match{"attempt_id", latest.NodeAttemptID})
	if err != nil {
		return err
	}
	if err := sc.st.Equal("ATTEMPT_RESOLUTION records of the latest attempt of "+node, 1, len(res)); err != nil {
		return err
	}
	r := res[0]
	reason, err := reasonGiven(c)
	if err != nil {
		return err
	}
	detail := func(k string) string { return orNone(str(r.Detail[k])) }
	for _, ch := range []struct{ field, want, seen string }{
		{"event_type", "ATTEMPT_RESOLVED", r.EventType},
		{"resolved_outcome", c.argAfter("--to"), r.ResolvedOutcome},
		{"service_principal", c.envValue("KSQL_FLOWNET_SERVICE_PRINCIPAL"), r.ServicePrincipal},
		{"requested_by", c.envValue("KSQL_FLOWNET_REQUESTED_BY"), r.RequestedBy},
		{"approved_by", orNone(c.argAfter("--approved-by")), orNone(r.ApprovedBy)},
		{"evidence_ref", c.argAfter("--evidence-ref"), r.EvidenceRef},
		{"stop_confirmed_by", c.argAfter("--stop-confirmed-by"), detail("stop_confirmed_by")},
		{"stop_evidence_ref", c.argAfter("--stop-evidence-ref"), detail("stop_evidence_ref")},
		{"reason", reason, detail("reason")},
		{"run_id", c.argAfter("--run-id"), detail("run_id")},
		{"node_id", c.argAfter("--node-id"), detail("node_id")},
	} {
		if err := sc.st.Equal(ch.field+" of the resolution against what "+name+" was given", ch.want, ch.seen); err != nil {
			return err
		}
	}
	return nil
}

// ---- refusals ----

// refused: the call exited 1 with an `Error [<code>]:` line on stderr (saying text, if given).
func refused(ctx context.Context, ref, code, text string) error {
	sc := sceneOf(ctx)
	c, err := processesOf(ctx).flownetRun(ref)
	if err != nil {
		return err
	}
	if err := c.finish(ctx); err != nil {
		return err
	}
	if err := sc.st.Equal("exit code of "+c.name, 1, c.result.ExitCode); err != nil {
		return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, c.stdout, c.stderr)
	}
	prefix := "Error [" + code + "]:"
	line := ""
	for _, l := range strings.Split(c.stderr, "\n") {
		if strings.HasPrefix(l, prefix) {
			line = l
			break
		}
	}
	if err := sc.st.Assert(fmt.Sprintf("stderr of %s has a line starting with %q", c.name, prefix), "such a line", orNone(firstLine(c.stderr)), line != ""); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	return sc.st.Assert(fmt.Sprintf("the %s line of %s says %q", code, c.name, text), text, line, strings.Contains(line, text))
}

func (operatorDomain) isRefused(ctx context.Context, ref, code string) error {
	return refused(ctx, ref, code, "")
}

func (operatorDomain) isRefusedSaying(ctx context.Context, ref, code, text string) error {
	return refused(ctx, ref, code, text)
}

func (operatorDomain) stderrDoesNotMention(ctx context.Context, ref, text string) error {
	c, err := processesOf(ctx).flownetRun(ref)
	if err != nil {
		return err
	}
	if err := c.finish(ctx); err != nil {
		return err
	}
	return sceneOf(ctx).st.Assert(fmt.Sprintf("stderr of %s mentions %q", c.name, text), "no", orNone(c.stderr), !strings.Contains(c.stderr, text))
}
