package csv

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvWrapperDomain: FlowNet runs whose kSQL-Flow is the target's own launcher behind
// `flowtest ksql-flow-wrapper` (the same on the sandbox and on a live target): csv1-03's
// kSQL-Flow without importCsv, whose node never starts, and CSV2's Shift_JIS exports.
type csvWrapperDomain struct{}

func (d csvWrapperDomain) register(reg stepdef.Registry) {
	reg.Step(`^FlowNet runs the network for the scope's business key with a kSQL-Flow whose capabilities lack importCsv as "([^"]+)"$`, d.runsWithLegacyKsqlFlow)
	reg.Step(`^the latest attempt of node "([^"]+)" never started: no start marker and no runner start marker$`, d.neverStarted)
	reg.Step(`^FlowNet has run the network for the scope's business key with the Shift_JIS export wrapper as "([^"]+)" and exited with code (\d+)$`, d.runsWithSJISWrapper)
	reg.Step(`^FlowNet reruns the run from node "([^"]+)" by its id with the Shift_JIS export wrapper as "([^"]+)"$`, d.rerunsWithSJISWrapper)
}

// wrappedKsqlFlow is FlowNet's KSQL_FLOW_BIN / KSQL_FLOW_BIN_ARGS for the target's own
// kSQL-Flow launcher wrapped by flowtest in mode: the same on the sandbox and on a live
// target, since only the launcher changes.
func wrappedKsqlFlow(sc *kit.Scene, mode string) ([]string, error) {
	self := sc.Suite.FlowtestBin
	if self == "" {
		return nil, fmt.Errorf("the kSQL-Flow wrapper (%s) needs the flowtest executable, which this run does not know", mode)
	}
	k := sc.Suite.Target.KsqlFlow
	if k.Path == "" {
		return nil, fmt.Errorf("the target has no kSQL-Flow launcher to wrap (%s)", mode)
	}
	args := append([]string{wrapmode.Command, "--mode", mode, "--launcher-args", strconv.Itoa(len(k.Args)), "--", k.Path}, k.Args...)
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return []string{"KSQL_FLOW_BIN=" + self, "KSQL_FLOW_BIN_ARGS=" + string(b)}, nil
}

// runsWithLegacyKsqlFlow plays a kSQL-Flow built before CSV import, as the original's
// generated stub did (scenarios.md §2.8.1): the target's own kSQL-Flow behind flowtest's
// wrapper, whose `capabilities --json` reports importCsv false.
func (csvWrapperDomain) runsWithLegacyKsqlFlow(ctx context.Context, name string) error {
	env, err := wrappedKsqlFlow(kit.SceneOf(ctx), wrapmode.LegacyCapabilities)
	if err != nil {
		return err
	}
	c, err := kit.RunNetworkWith(ctx, name, env, "--business-key", kit.FixturesOf(ctx).Scope().BusinessKey())
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}

func (csvWrapperDomain) neverStarted(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	a, err := kit.LatestAttemptOf(ctx, name)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.execution_started_at").Equal("execution_started_at of the latest attempt of "+name, "(none)", kit.OrNone(a.ExecutionStartedAt)); err != nil {
		return err
	}
	return sc.St.On("audit.NODE_ATTEMPT.runner_execution_started_at").Equal("runner_execution_started_at of the latest attempt of "+name, "(none)", kit.OrNone(a.RunnerExecutionStartedAt))
}

// sjisWrapper plays the original's csv2-encoding-wrapper.mjs as KSQL_FLOW_BIN: export runs
// get --export-encoding sjis (scenarios.md §2.9).
func sjisWrapper(sc *kit.Scene) ([]string, error) {
	return wrappedKsqlFlow(sc, wrapmode.ExportSJIS)
}

func (csvWrapperDomain) runsWithSJISWrapper(ctx context.Context, name string, code int) error {
	sc := kit.SceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	c, err := kit.RunNetworkWith(ctx, name, env, "--business-key", kit.FixturesOf(ctx).Scope().BusinessKey())
	if err != nil {
		return err
	}
	if err := c.Finish(ctx); err != nil {
		return err
	}
	return sc.St.On(c.ExitSubject()).Equal("exit code of "+name, code, c.Result.ExitCode)
}

func (csvWrapperDomain) rerunsWithSJISWrapper(ctx context.Context, node, name string) error {
	sc := kit.SceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	rn, err := kit.FixturesOf(ctx).Node(node)
	if err != nil {
		return err
	}
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	if err := kit.SnapshotAttempts(ctx, name); err != nil {
		return err
	}
	c, err := kit.RunNetworkWith(ctx, name, env, "--resume-run", id, "--rerun-from", rn.ID)
	if err != nil {
		return err
	}
	return c.Finish(ctx)
}
