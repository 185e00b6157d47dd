package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
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

// The kSQL-Flow wrapper: `flowtest ksql-flow-wrapper` (internal/app/ksqlwrap) and its
// modes, shared here so the steps and the command cannot disagree on them.
const (
	KsqlFlowWrapperCommand = "ksql-flow-wrapper"
	WrapLegacyCapabilities = "legacy-capabilities" // capabilities --json says importCsv false
	WrapExportSJIS         = "export-sjis"         // export runs get --export-encoding sjis
)

// wrappedKsqlFlow is FlowNet's KSQL_FLOW_BIN / KSQL_FLOW_BIN_ARGS for the target's own
// kSQL-Flow launcher wrapped by flowtest in mode: the same on the sandbox and on a live
// target, since only the launcher changes.
func wrappedKsqlFlow(sc *scene, mode string) ([]string, error) {
	self := sc.suite.FlowtestBin
	if self == "" {
		return nil, fmt.Errorf("the kSQL-Flow wrapper (%s) needs the flowtest executable, which this run does not know", mode)
	}
	k := sc.suite.Target.KsqlFlow
	if k.Path == "" {
		return nil, fmt.Errorf("the target has no kSQL-Flow launcher to wrap (%s)", mode)
	}
	args := append([]string{KsqlFlowWrapperCommand, "--mode", mode, "--launcher-args", strconv.Itoa(len(k.Args)), "--", k.Path}, k.Args...)
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
	env, err := wrappedKsqlFlow(sceneOf(ctx), WrapLegacyCapabilities)
	if err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--business-key", fixturesOf(ctx).scope().BusinessKey())
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

func (csvWrapperDomain) neverStarted(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	a, err := latestAttemptOf(ctx, name)
	if err != nil {
		return err
	}
	if err := sc.st.Equal("execution_started_at of the latest attempt of "+name, "(none)", orNone(a.ExecutionStartedAt)); err != nil {
		return err
	}
	return sc.st.Equal("runner_execution_started_at of the latest attempt of "+name, "(none)", orNone(a.RunnerExecutionStartedAt))
}

// sjisWrapper plays the original's csv2-encoding-wrapper.mjs as KSQL_FLOW_BIN: export runs
// get --export-encoding sjis (scenarios.md §2.9).
func sjisWrapper(sc *scene) ([]string, error) {
	return wrappedKsqlFlow(sc, WrapExportSJIS)
}

func (csvWrapperDomain) runsWithSJISWrapper(ctx context.Context, name string, code int) error {
	sc := sceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--business-key", fixturesOf(ctx).scope().BusinessKey())
	if err != nil {
		return err
	}
	if err := c.finish(ctx); err != nil {
		return err
	}
	return sc.st.Equal("exit code of "+name, code, c.result.ExitCode)
}

func (csvWrapperDomain) rerunsWithSJISWrapper(ctx context.Context, node, name string) error {
	sc := sceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	rn, err := fixturesOf(ctx).node(node)
	if err != nil {
		return err
	}
	id, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	if err := snapshotAttempts(ctx, name); err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--resume-run", id, "--rerun-from", rn.ID)
	if err != nil {
		return err
	}
	return c.finish(ctx)
}
