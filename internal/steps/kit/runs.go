package kit

import (
	"context"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
)

// runDomain: FlowNet run-network calls — starting, resuming, and what each call received and
// reported.
type runDomain struct{}

func (d runDomain) register(reg stepdef.Registry) {
	reg.Step(`^FlowNet runs the network for the scope's business key$`, d.runsTheNetwork)
	reg.Step(`^FlowNet runs the network for the scope's business key in the background$`, d.runsTheNetworkInTheBackground)
	reg.Step(`^FlowNet runs the network for the scope's business key in the background as "([^"]+)"$`, d.runsInTheBackgroundAs)
	reg.Step(`^FlowNet runs the network for the scope's business key in the background as "([^"]+)" with owner instance "([^"]+)"$`, d.runsInTheBackgroundWithOwner)
	reg.Step(`^FlowNet resumes the run by its id as "([^"]+)"$`, d.resumesTheRunByID)
	reg.Step(`^FlowNet reruns the run from node "([^"]+)" by its id as "([^"]+)"$`, d.rerunsFromNode)
	reg.Step(`^FlowNet has run the network for the scope's business key as "([^"]+)" and exited with code (\d+)$`, d.hasRunTheNetworkAs)
	reg.Step(`^FlowNet has run the network for the scope's business key with an invalid (customers|deals) token as "([^"]+)" and exited with code (\d+)$`, d.hasRunWithInvalidToken)
	reg.Step(`^FlowNet runs the network the cron way, --scheduled-for "([^"]+)" --resume --json, as "([^"]+)"$`, d.runsTheCronWay)
	reg.Step(`^FlowNet runs the network again with --resume and the identical call as "([^"]+)"$`, d.resumesAs)
	reg.Step(`^`+ProcRef+` printed one JSON line: outcome "([A-Z]+)", the run, its last invocation, aggregate "([A-Z]+)" and result code "([A-Z_]+)"$`, d.printedRunJSON)
	reg.Step(`^the stdout of `+ProcRef+` has a line starting with "([^"]*)"$`, d.stdoutHasLine)
	reg.Step(`^"([^"]+)" and "([^"]+)" received the same identity: profile, network, business key and run key$`, d.sameIdentity)
	reg.Step(`^"([^"]+)" reported the run id that "([^"]+)" reported, the run persisted for the business key$`, d.sameReportedRunID)
	reg.Step(`^`+ProcRef+` reported the run id of the run persisted for the business key$`, d.reportedRunIsPersisted)
	reg.Step(`^the scope's business key has no NETWORK_RUN record$`, d.noRunForKey)
}

// RunNetwork starts `run-network <network> --business-key <scope key> [extra…]`.
func RunNetwork(ctx context.Context, name string, extra ...string) (*FlownetCall, error) {
	return RunNetworkWith(ctx, name, nil, append([]string{"--business-key", FixturesOf(ctx).Scope().BusinessKey()}, extra...)...)
}

// RunNetworkWith starts `run-network <network> args…` with env added to FlowNet's.
func RunNetworkWith(ctx context.Context, name string, env []string, args ...string) (*FlownetCall, error) {
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return nil, err
	}
	return StartFlowNet(ctx, FlownetSpec{Name: name, Sub: "run-network", Args: append([]string{n.Path}, args...), Env: env})
}

// resumeRunByID runs `run-network <network> --resume-run <the run> [extra…]` to its end.
func resumeRunByID(ctx context.Context, name string, extra ...string) error {
	id, err := CurrentRunID(ctx)
	if err != nil {
		return err
	}
	if err := SnapshotAttempts(ctx, name); err != nil {
		return err
	}
	c, err := RunNetworkWith(ctx, name, nil, append([]string{"--resume-run", id}, extra...)...)
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (runDomain) runsTheNetwork(ctx context.Context) error {
	c, err := RunNetwork(ctx, "")
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (runDomain) runsTheNetworkInTheBackground(ctx context.Context) error {
	_, err := RunNetwork(ctx, "")
	return err
}

func (runDomain) runsInTheBackgroundAs(ctx context.Context, name string) error {
	_, err := RunNetwork(ctx, name)
	return err
}

// runsInTheBackgroundWithOwner gives the run an owner instance of its own (a Cloud Run
// execution name, say) through KSQL_FLOWNET_OWNER_INSTANCE_ID.
func (runDomain) runsInTheBackgroundWithOwner(ctx context.Context, name, instance string) error {
	_, err := RunNetworkWith(ctx, name, []string{"KSQL_FLOWNET_OWNER_INSTANCE_ID=" + instance},
		"--business-key", FixturesOf(ctx).Scope().BusinessKey())
	return err
}

func (runDomain) resumesTheRunByID(ctx context.Context, name string) error {
	return resumeRunByID(ctx, name)
}

func (runDomain) rerunsFromNode(ctx context.Context, node, name string) error {
	n, err := FixturesOf(ctx).Node(node)
	if err != nil {
		return err
	}
	return resumeRunByID(ctx, name, "--rerun-from", n.ID)
}

// invalidBusinessToken is what a forced initial failure gives kSQL-Flow for a business app
// (scenarios.md §6.2): the first read of that app fails with AUTH_ERROR, so the Run ends
// FAILED, and a later resume (with the real token) can complete it.
const invalidBusinessToken = "KSQL_FLOW_TEST_invalid"

func (runDomain) hasRunWithInvalidToken(ctx context.Context, app, name string, code int) error {
	v := target.EnvKsqlCustomersToken
	if app == "deals" {
		v = target.EnvKsqlDealsToken
	}
	c, err := RunNetworkWith(ctx, name, []string{v + "=" + invalidBusinessToken}, "--business-key", FixturesOf(ctx).Scope().BusinessKey())
	if err != nil {
		return err
	}
	if err := c.Finish(ctx); err != nil {
		return err
	}
	return SceneOf(ctx).St.On("exit.run-network").Equal("exit code of "+name, code, c.Result.ExitCode)
}

// runsTheCronWay is the product's cron path for a scheduled network (scenarios.md §2.6.5):
// the business key derived from --scheduled-for, a Run resumed if one is unfinished.
func (runDomain) runsTheCronWay(ctx context.Context, at, name string) error {
	c, err := RunNetworkWith(ctx, name, nil, "--scheduled-for", at, "--resume", "--json")
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (runDomain) hasRunTheNetworkAs(ctx context.Context, name string, code int) error {
	c, err := RunNetwork(ctx, name)
	if err != nil {
		return err
	}
	if err := c.Finish(ctx); err != nil {
		return err
	}
	return SceneOf(ctx).St.On("exit.run-network").Equal("exit code of "+name, code, c.Result.ExitCode)
}

func (runDomain) resumesAs(ctx context.Context, name string) error {
	if len(ProcessesOf(ctx).flownetCalls()) == 0 {
		return fmt.Errorf("no earlier FlowNet call to resume")
	}
	if err := SnapshotAttempts(ctx, name); err != nil {
		return err
	}
	c, err := RunNetwork(ctx, name, "--resume")
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (runDomain) stdoutHasLine(ctx context.Context, ref, prefix string) error {
	return HasLineStarting(ctx, ref, "stdout", prefix)
}

// HasLineStarting asserts that a FlowNet call's stdout or stderr has a line starting with
// prefix.
func HasLineStarting(ctx context.Context, ref, stream, prefix string) error {
	c, err := ProcessesOf(ctx).FinishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	text := c.Stdout
	if stream == "stderr" {
		text = c.Stderr
	}
	found := ""
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			found = line
			break
		}
	}
	return SceneOf(ctx).St.On(c.LineSubject(prefix)).Assert(fmt.Sprintf("%s of %s has a line starting with %q", stream, c.Name, prefix), "such a line", OrNone(found), found != "")
}

// identity is what one run-network call received and what it names.
type identity struct {
	profile, networkPath, networkID, businessKey string
}

// identityOf reads a call's identity from what the process received: the profile from its
// environment, the network file and business key from its argv, the network id from the
// network file it was given.
func identityOf(c *FlownetCall) (identity, error) {
	id := identity{
		profile:     c.EnvValue("KSQL_FLOWNET_PROFILE"),
		networkPath: c.SubArg(0),
		businessKey: c.ArgAfter("--business-key"),
	}
	data, err := os.ReadFile(id.networkPath)
	if err != nil {
		return id, fmt.Errorf("network file of %s: %w", c.Name, err)
	}
	var doc struct {
		NetworkID string `yaml:"network_id"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return id, fmt.Errorf("network file of %s (%s): %w", c.Name, id.networkPath, err)
	}
	id.networkID = doc.NetworkID
	return id, nil
}

// FinishedCall resolves one named FlowNet call and waits for it to end.
func FinishedCall(ctx context.Context, name string) (*FlownetCall, error) {
	return ProcessesOf(ctx).FinishedFlownetRun(ctx, `"`+name+`"`)
}

// FinishedCalls resolves named FlowNet calls and waits for each to end.
func FinishedCalls(ctx context.Context, names ...string) ([]*FlownetCall, error) {
	var out []*FlownetCall
	for _, name := range names {
		c, err := FinishedCall(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (runDomain) sameIdentity(ctx context.Context, first, second string) error {
	sc := SceneOf(ctx)
	calls, err := FinishedCalls(ctx, first, second)
	if err != nil {
		return err
	}
	a, b := calls[0], calls[1]
	ia, err := identityOf(a)
	if err != nil {
		return err
	}
	ib, err := identityOf(b)
	if err != nil {
		return err
	}
	pairs := []struct{ what, a, b string }{
		{"profile", ia.profile, ib.profile},
		{"network file", ia.networkPath, ib.networkPath},
		{"network id", ia.networkID, ib.networkID},
		{"business key", ia.businessKey, ib.businessKey},
	}
	for _, p := range pairs {
		if err := sc.St.On("process.environment").Assert(fmt.Sprintf("%s received by %s and %s", p.what, first, second),
			"the same, non-empty", p.a+" | "+p.b, p.a != "" && p.a == p.b); err != nil {
			return err
		}
	}
	// The run key both calls resolve is R1 over what they received; FlowNet persisted it
	// as the record_key of the run it reported.
	want, err := CanonicalKey("R1", ib.profile, ib.networkID, ib.businessKey)
	if err != nil {
		return err
	}
	if err := sc.St.On("output.run-network.json.run_id", "text.run-network:\"NEW|RESUME: Run \"").Assert("run id reported by "+second, "non-empty", OrNone(b.runID), b.runID != ""); err != nil {
		return err
	}
	runs, err := ReadExact(ctx, sc, target.RoleState, DecodeNetworkRun, Match{"record_type", "NETWORK_RUN"}, Match{"run_id", b.runID})
	if err != nil {
		return err
	}
	if err := sc.St.On("state.NETWORK_RUN.run_id").Equal("NETWORK_RUN records of run "+b.runID, 1, len(runs)); err != nil {
		return err
	}
	return sc.St.On("state.NETWORK_RUN.record_key").Equal("record_key of run "+b.runID+" against R1(profile, network id, business key)", want, runs[0].RecordKey)
}

func (runDomain) sameReportedRunID(ctx context.Context, later, earlier string) error {
	sc := SceneOf(ctx)
	calls, err := FinishedCalls(ctx, earlier, later)
	if err != nil {
		return err
	}
	a, b := calls[0], calls[1]
	for _, c := range calls {
		if err := sc.St.On("output.run-network.json.run_id", "text.run-network:\"NEW|RESUME: Run \"").Assert("run id reported by "+c.Name, "non-empty (RESUME:/NEW: line or --json)", OrNone(c.runID), c.runID != ""); err != nil {
			return err
		}
	}
	if err := sc.St.On("output.run-network.json.run_id", "text.run-network:\"NEW|RESUME: Run \"").Equal("run id reported by "+later+" against "+earlier, a.runID, b.runID); err != nil {
		return err
	}
	run, err := theOneRunOfTheKey(ctx)
	if err != nil {
		return err
	}
	return sc.St.On("state.NETWORK_RUN.run_id").Equal("persisted run id of the business key against the reported one", b.runID, run.RunID)
}

// reportedRunIsPersisted: the run id a run-network call reported (its NEW:/RESUME: line or
// --json run_id) is that of the one NETWORK_RUN of the business key. Later steps read "the
// run" by the reported id, so a wrong one must fail here, by this name, and not later as a
// read that finds no record.
func (runDomain) reportedRunIsPersisted(ctx context.Context, ref string) error {
	sc := SceneOf(ctx)
	c, err := ProcessesOf(ctx).FinishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	if err := sc.St.On("output.run-network.json.run_id", "text.run-network:\"NEW|RESUME: Run \"").Assert("run id reported by "+c.Name, "non-empty (NEW:/RESUME: line or --json)", OrNone(c.runID), c.runID != ""); err != nil {
		return err
	}
	run, err := theOneRunOfTheKey(ctx)
	if err != nil {
		return err
	}
	return sc.St.On("output.run-network.json.run_id", "state.NETWORK_RUN.run_id").Equal("run id reported by "+c.Name+" against the run persisted for the business key", run.RunID, c.runID)
}

// noRunForKey: no NETWORK_RUN record of the scope's business key exists in the current
// network (read exactly in Go, not by kintone's token match).
func (runDomain) noRunForKey(ctx context.Context) error {
	runs, err := runsForBusinessKey(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.RunID)
	}
	return SceneOf(ctx).St.On("state.NETWORK_RUN.business_key").Equal("NETWORK_RUN records for the business key", "(none)", OrNone(strings.Join(ids, ", ")))
}

// theOneRunOfTheKey requires (as a step's assertion) that the scope's business key has exactly
// one NETWORK_RUN in the current network, and returns it.
func theOneRunOfTheKey(ctx context.Context) (NetworkRun, error) {
	runs, err := runsForBusinessKey(ctx)
	if err != nil {
		return NetworkRun{}, err
	}
	if err := SceneOf(ctx).St.On("state.NETWORK_RUN.business_key").Equal("NETWORK_RUN records for the business key", 1, len(runs)); err != nil {
		return NetworkRun{}, err
	}
	return runs[0], nil
}
