package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/wait"
)

// flownetCall is one FlowNet CLI process the scenario started.
type flownetCall struct {
	name    string
	args    []string
	network string // rendered network path
	bizKey  string
	proc    *proc.Process
	result  *proc.Result
	stdout  string
	runID   string
}

func addRunSteps(reg stepdef.Registry) {
	reg.Step(`^the network fixture "([^"]+)"$`, func(ctx context.Context, name string) error {
		return worldFrom(ctx).renderNetwork(name, nil)
	})
	reg.Step(`^the network fixture "([^"]+)" with node "([^"]+)" running "([^"]+)"$`, func(ctx context.Context, name, node, sql string) error {
		return worldFrom(ctx).renderNetwork(name, map[string]string{node: sql})
	})
	reg.Step(`^FlowNet runs the network for the scope's business key$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		c, err := w.startFlowNet(ctx, nil)
		if err != nil {
			return err
		}
		return w.finish(ctx, c)
	})
	reg.Step(`^FlowNet runs the network for the scope's business key in the background$`, func(ctx context.Context) error {
		_, err := worldFrom(ctx).startFlowNet(ctx, nil)
		return err
	})
	reg.Step(`^FlowNet has run the network for the scope's business key and exited with code (\d+)$`, func(ctx context.Context, code int) error {
		w := worldFrom(ctx)
		c, err := w.startFlowNet(ctx, nil)
		if err != nil {
			return err
		}
		if err := w.finish(ctx, c); err != nil {
			return err
		}
		return w.st.Equal("exit code of "+c.name, code, c.result.ExitCode)
	})
	reg.Step(`^FlowNet runs the network again with --resume and the identical call$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		if len(w.calls) == 0 {
			return fmt.Errorf("no earlier FlowNet call to resume")
		}
		if err := w.snapshotAttempts(ctx); err != nil {
			return err
		}
		c, err := w.startFlowNet(ctx, []string{"--resume"})
		if err != nil {
			return err
		}
		return w.finish(ctx, c)
	})
	reg.Step(`^the FlowNet run exits with code (\d+)$`, func(ctx context.Context, code int) error {
		w := worldFrom(ctx)
		c, err := w.finishedLastCall(ctx)
		if err != nil {
			return err
		}
		err = w.st.Equal("exit code of "+c.name, code, c.result.ExitCode)
		if err != nil {
			return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, c.proc.StdoutTail(), c.proc.StderrTail())
		}
		return nil
	})
	reg.Step(`^its stdout has a line starting with "([^"]*)"$`, func(ctx context.Context, prefix string) error {
		w := worldFrom(ctx)
		c, err := w.finishedLastCall(ctx)
		if err != nil {
			return err
		}
		found := ""
		for _, line := range strings.Split(c.stdout, "\n") {
			if strings.HasPrefix(line, prefix) {
				found = line
				break
			}
		}
		return w.st.Assert(fmt.Sprintf("stdout of %s has a line starting with %q", c.name, prefix), "such a line", orNone(found), found != "")
	})
	reg.Step(`^both calls had the same identity: profile, network, business key and run key$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		if len(w.calls) < 2 {
			return fmt.Errorf("need two FlowNet calls, have %d", len(w.calls))
		}
		a, b := w.calls[0], w.calls[len(w.calls)-1]
		if err := w.st.Equal("network file of both calls", a.network, b.network); err != nil {
			return err
		}
		if err := w.st.Equal("business key of both calls", a.bizKey, b.bizKey); err != nil {
			return err
		}
		// The profile is the target's for every call; the run key (R1) is FlowNet's: the
		// persisted NETWORK_RUN that both calls resolved must be one and the same record.
		runs, err := w.runsForBusinessKey(ctx)
		if err != nil {
			return err
		}
		keys := map[string]bool{}
		for _, r := range runs {
			keys[r.Str("record_key")] = true
		}
		return w.st.Equal("distinct run keys persisted for the business key", 1, len(keys))
	})
	reg.Step(`^the resumed run keeps the same run id$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		if len(w.calls) < 2 {
			return fmt.Errorf("need two FlowNet calls, have %d", len(w.calls))
		}
		return w.st.Equal("run id after resume", w.calls[0].runID, w.calls[len(w.calls)-1].runID)
	})
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// renderNetwork renders a network fixture (and its SQL) into the scenario work dir with
// the scope's identifiers.
func (w *world) renderNetwork(name string, swap map[string]string) error {
	src := filepath.Join(w.suite.FixturesDir, "networks", name)
	opts := scope.RenderOptions{}
	if len(swap) > 0 {
		opts.SwapSQL = map[string]string{}
		for node, sql := range swap {
			opts.SwapSQL[node] = filepath.Join(w.suite.FixturesDir, "jobs", sql)
		}
	}
	dst := filepath.Join(w.st.WorkDir, "network-"+w.scope.Hash8())
	r, err := w.scope.Render(src, dst, opts)
	if err != nil {
		return fmt.Errorf("render fixture %s: %w", name, err)
	}
	w.network, w.networkFixture, w.networkSwap = &r, name, swap
	return nil
}

// flowNetDir is where FlowNet runs: the SUT checkout on a live target, else the scenario
// work dir.
func (w *world) flowNetDir() string {
	if d := w.suite.Target.FlowNet.Dir; d != "" {
		return d
	}
	return w.st.WorkDir
}

func (w *world) flowNetEnv() []string {
	env := w.suite.Target.FlowNetEnv("", w.ksqlWorkDir)
	return append(env,
		"KSQL_FLOWNET_REQUESTED_BY="+w.scope.Principal("requester"),
		"KSQL_FLOWNET_SERVICE_PRINCIPAL="+w.scope.Principal("service"),
		"KSQL_FLOWNET_HOST="+w.scope.Host(),
	)
}

// startFlowNet starts `run-network <network> --business-key <scope key> [extra…]`.
func (w *world) startFlowNet(ctx context.Context, extra []string) (*flownetCall, error) {
	if w.network == nil {
		return nil, fmt.Errorf("no network fixture was rendered (missing Given the network fixture …)")
	}
	if err := os.MkdirAll(w.ksqlWorkDir, 0o755); err != nil {
		return nil, err
	}
	c := &flownetCall{
		name:    fmt.Sprintf("flownet-run-%d", len(w.calls)+1),
		network: w.network.Path,
		bizKey:  w.scope.BusinessKey(),
	}
	args := append([]string{"run-network", c.network, "--business-key", c.bizKey}, extra...)
	path, argv := w.suite.Target.FlowNet.With(args...)
	c.args = argv
	p, err := proc.Start(ctx, proc.Spec{
		Name: c.name, Path: path, Args: argv, Env: w.flowNetEnv(),
		Dir: w.flowNetDir(), LogDir: w.st.WorkDir,
	})
	if err != nil {
		return nil, fmt.Errorf("start FlowNet: %w", err)
	}
	c.proc = p
	w.calls = append(w.calls, c)
	fmt.Fprintf(w.st.Log, "  started %s (pid %d)\n", c.name, p.Pid())
	return c, nil
}

// flowNetDone reports whether every FlowNet process of the scenario has exited.
func (w *world) flowNetDone() bool {
	for _, c := range w.calls {
		if _, done := c.proc.Exited(); !done {
			return false
		}
	}
	return len(w.calls) > 0
}

// finishedLastCall waits for the latest FlowNet call to end and returns it.
func (w *world) finishedLastCall(ctx context.Context) (*flownetCall, error) {
	if len(w.calls) == 0 {
		return nil, fmt.Errorf("no FlowNet call was made")
	}
	c := w.calls[len(w.calls)-1]
	return c, w.finish(ctx, c)
}

// finish waits for a FlowNet call to exit (bounded by the step's deadline) and resolves the
// run id it worked on.
func (w *world) finish(ctx context.Context, c *flownetCall) error {
	if c.result == nil {
		if err := waitExit(ctx, c.name, c.proc); err != nil {
			return err
		}
		res, _ := c.proc.Exited()
		c.result = &res
		out, err := c.proc.Stdout()
		if err != nil {
			return fmt.Errorf("read stdout of %s: %w", c.name, err)
		}
		c.stdout = out
	}
	if c.runID == "" {
		runs, err := w.runsForBusinessKey(ctx)
		if err != nil {
			return err
		}
		if len(runs) == 1 {
			c.runID = runs[0].Str("run_id")
			if w.runID == "" {
				w.runID = c.runID
			}
		}
	}
	return nil
}

// waitExit waits for a process to exit, printing progress on long waits.
func waitExit(ctx context.Context, name string, p *proc.Process) error {
	timeout := 10 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return wait.Until(ctx, name+" to exit", timeout, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if res, done := p.Exited(); done {
			return true, res.String(), nil
		}
		return false, "still running", nil
	})
}
