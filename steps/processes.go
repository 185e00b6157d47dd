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
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/kintoneapi"
)

// holderRun is the standalone kSQL-Flow that holds a job lock (m5-lock-conflict).
type holderRun struct {
	proc  *proc.Process
	jobID string
	dir   string
}

// Lock-conflict ordering trials (the original's MAX_ORDER_ATTEMPTS).
const maxOrderTrials = 3

func addProcessSteps(reg stepdef.Registry) {
	reg.Step(`^no kSQL-Flow process of this scope is alive$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		pids, err := proc.FindByArgv(ctx, w.scopeProcessMatch())
		if err != nil {
			return err
		}
		return w.st.Equal("kSQL-Flow processes of this scope before the run", 0, len(pids))
	})
	reg.Step(`^node "([^"]+)" has a RUNNING attempt with its JOB log start marker$`, func(ctx context.Context, node string) error {
		return worldFrom(ctx).awaitRunningAttempt(ctx, node)
	})
	reg.Step(`^the kSQL-Flow child of that attempt is killed$`, func(ctx context.Context) error {
		return worldFrom(ctx).killRunningAttempt(ctx)
	})
	reg.Step(`^FlowNet runs the network while a standalone kSQL-Flow holds the job lock of node "([^"]+)" with "([^"]+)"$`, func(ctx context.Context, node, sql string) error {
		return worldFrom(ctx).runAgainstHeldLock(ctx, node, sql)
	})
	reg.Step(`^the standalone kSQL-Flow exits with code (\d+)$`, func(ctx context.Context, code int) error {
		w := worldFrom(ctx)
		if w.holder == nil {
			return fmt.Errorf("no standalone kSQL-Flow was started")
		}
		if err := waitExit(ctx, "standalone kSQL-Flow", w.holder.proc); err != nil {
			return err
		}
		res, _ := w.holder.proc.Exited()
		return w.st.Equal("exit code of the standalone kSQL-Flow", code, res.ExitCode)
	})
}

// scopeProcessMatch matches kSQL-Flow processes of this scope: their argv carries a job id
// of the scope (every job id holds the scope hash).
func (w *world) scopeProcessMatch() proc.ArgvMatch {
	return proc.ArgvContains(scope.Prefix + w.scope.Hash8() + "_")
}

func (w *world) awaitRunningAttempt(ctx context.Context, node string) error {
	id, err := w.nodeID(node)
	if err != nil {
		return err
	}
	var attempt kintoneapi.Record
	err = wait.Until(ctx, "a RUNNING attempt of "+node+" with its JOB log start marker", 2*time.Minute, 200*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			if _, err := w.requireRunID(ctx); err != nil {
				return false, "no run yet: " + err.Error(), nil
			}
			atts, err := w.attemptsOf(ctx, id)
			if err != nil {
				return false, "", err
			}
			var running *kintoneapi.Record
			for i := range atts {
				if atts[i].Str("status") == "RUNNING" {
					running = &atts[i]
				}
			}
			if running == nil {
				return false, fmt.Sprintf("%d attempts, none RUNNING", len(atts)), nil
			}
			rows, err := w.reader.GetAll(ctx, w.app(target.RoleLog),
				fmt.Sprintf(`attempt_id = %s`, quote(running.Str("node_attempt_id"))), nil)
			if err != nil {
				return false, "", err
			}
			for _, r := range rows {
				if r.Str("status") == "RUNNING" && r.Str("runner_execution_started_at") != "" {
					attempt = *running
					return true, "JOB log RUNNING with start marker", nil
				}
			}
			return false, fmt.Sprintf("attempt %s RUNNING, JOB log rows %d without a start marker", running.Str("node_attempt_id"), len(rows)), nil
		})
	if err != nil {
		return err
	}
	w.runningAttempt, w.runningNode = &attempt, node
	return w.st.Assert("attempt of "+node+" RUNNING with a JOB log start marker", "present", attempt.Str("node_attempt_id"), true)
}

// killRunningAttempt kills exactly the kSQL-Flow process tree started for the RUNNING
// attempt, found by its command line (`--attempt-id <id>` and the scope).
func (w *world) killRunningAttempt(ctx context.Context) error {
	if w.runningAttempt == nil {
		return fmt.Errorf("no RUNNING attempt was found first")
	}
	attemptID := w.runningAttempt.Str("node_attempt_id")
	match := proc.AllOf(proc.ArgvHasSeq("--attempt-id", attemptID), w.scopeProcessMatch())
	tree, killed, err := proc.KillOneTree(ctx, "kSQL-Flow child of attempt "+attemptID, match)
	if err != nil {
		return err
	}
	w.killed = true
	node := w.runningNode
	w.st.Defer("recover the job lock of "+node+" if the scenario did not", func(ctx context.Context) error {
		if w.recovery != nil {
			return nil
		}
		_, err := w.recoverJobLock(ctx, node)
		return err
	})
	return w.st.Assert("killed the kSQL-Flow tree of attempt "+attemptID, "one tree", fmt.Sprintf("root pid %d, %d processes killed", tree.Root, len(killed)), len(killed) >= 1)
}

// ksqlFlow starts one kSQL-Flow command (operator use) and waits for it.
func (w *world) ksqlFlow(ctx context.Context, name, dir string, args ...string) (*proc.Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path, argv := w.suite.Target.KsqlFlow.With(args...)
	env := append(append([]string(nil), w.suite.Target.BaseEnv...), w.suite.Target.KsqlFlowEnv()...)
	return proc.Start(ctx, proc.Spec{Name: name, Path: path, Args: argv, Env: env, Dir: dir, LogDir: w.st.WorkDir})
}

func (w *world) ksqlFlowArgs(extra ...string) []string {
	t := w.suite.Target
	return append(extra, "--profile", t.Profile, "--config", t.KsqlFlowConfig)
}

// runAgainstHeldLock: a standalone kSQL-Flow takes the job lock of node's job first (from its
// own working directory), and only once its JOB log row is RUNNING does FlowNet start. If the
// holder finished before FlowNet reached the node (no conflict), the ordering is retried with
// a fresh sub-scope, up to three trials.
func (w *world) runAgainstHeldLock(ctx context.Context, node, sql string) error {
	var diagnostics []string
	for trial := 1; trial <= maxOrderTrials; trial++ {
		if trial > 1 {
			if err := w.newTrialScope(trial); err != nil {
				return err
			}
		}
		outcome, err := w.lockConflictTrial(ctx, trial, node, sql)
		if err != nil {
			return err
		}
		diagnostics = append(diagnostics, fmt.Sprintf("trial %d: %s", trial, outcome))
		if outcome == "STANDALONE_FIRST" {
			return w.st.Assert("job lock conflict observed", "STANDALONE_FIRST within 3 trials", strings.Join(diagnostics, "; "), true)
		}
	}
	code := "M5_LOCK_CONFLICT_NOT_OBSERVED"
	allN1 := true
	for _, d := range diagnostics {
		allN1 = allN1 && strings.HasSuffix(d, "N1_FIRST")
	}
	if allN1 {
		code = "M5_LOCK_ORDER_REVERSED"
	}
	return w.st.Assert("job lock conflict observed", "STANDALONE_FIRST within 3 trials", code+": "+strings.Join(diagnostics, "; "), false)
}

// newTrialScope re-renders the network under a fresh scope for the next ordering trial (the
// previous trial's run still holds its business key and network).
func (w *world) newTrialScope(trial int) error {
	sc, err := scope.New(fmt.Sprintf("%s_trial%d", w.st.ID, trial), time.Now(), nil)
	if err != nil {
		return fmt.Errorf("trial %d scope: %w", trial, err)
	}
	old := w.scope
	if w.suite.Cleaner != nil {
		runIDs := w.runIDs()
		w.st.Defer("delete the records of "+old.ID(), func(ctx context.Context) error {
			_, err := w.suite.Cleaner.DeleteScope(ctx, old, runIDs)
			return err
		})
	}
	w.scope = sc
	w.calls, w.runID, w.holder = nil, "", nil
	return w.renderNetwork(w.networkFixture, w.networkSwap)
}

func (w *world) lockConflictTrial(ctx context.Context, trial int, node, sql string) (string, error) {
	fixtureJob := ""
	for _, n := range w.network.Nodes {
		if n.FixtureID == node {
			fixtureJob = n.FixtureJobID
		}
	}
	if fixtureJob == "" {
		return "", fmt.Errorf("network %s has no node %q", w.network.FixtureNetworkID, node)
	}
	dir := filepath.Join(w.st.WorkDir, fmt.Sprintf("standalone-cwd-%d", trial))
	if strings.EqualFold(filepath.Clean(dir), filepath.Clean(w.flowNetDir())) {
		return "", fmt.Errorf("the standalone kSQL-Flow must not share FlowNet's working directory %s (kSQL-Flow's local lock would collide first)", dir)
	}
	if err := w.st.Assert("standalone working directory differs from FlowNet's (case-insensitive)", "different", dir, true); err != nil {
		return "", err
	}
	sqlPath := filepath.Join(dir, "job", sql)
	jobID, err := w.scope.RenderSQL(filepath.Join(w.suite.FixturesDir, "jobs", sql), sqlPath, fixtureJob, nil)
	if err != nil {
		return "", fmt.Errorf("render %s: %w", sql, err)
	}
	attemptID := w.scope.ID() + "_standalone"
	p, err := w.ksqlFlow(ctx, fmt.Sprintf("standalone-ksql-flow-%d", trial), dir, w.ksqlFlowArgs("run", "-f", sqlPath,
		"--result-json", filepath.Join(dir, "standalone-result.json"),
		"--correlation-id", w.scope.ID()+"_holder", "--attempt-id", attemptID, "--expected-job-id", jobID)...)
	if err != nil {
		return "", fmt.Errorf("start the standalone kSQL-Flow: %w", err)
	}
	w.holder = &holderRun{proc: p, jobID: jobID, dir: dir}
	// Hold until the holder's JOB log row is RUNNING: the job lock is then taken.
	err = wait.Until(ctx, "the standalone kSQL-Flow's JOB log row to be RUNNING", time.Minute, 100*time.Millisecond,
		func(ctx context.Context) (bool, string, error) {
			if res, done := p.Exited(); done {
				return false, "", wait.Permanent(fmt.Errorf("standalone kSQL-Flow exited before it held the lock (%s): %s", res, p.StderrTail()))
			}
			rows, err := w.reader.GetAll(ctx, w.app(target.RoleLog), fmt.Sprintf(`attempt_id = %s`, quote(attemptID)), nil)
			if err != nil {
				return false, "", err
			}
			for _, r := range rows {
				if r.Str("status") == "RUNNING" {
					return true, "RUNNING", nil
				}
			}
			return false, fmt.Sprintf("%d rows, none RUNNING", len(rows)), nil
		})
	if err != nil {
		return "", err
	}
	c, err := w.startFlowNet(ctx, nil)
	if err != nil {
		return "", err
	}
	if err := w.finish(ctx, c); err != nil {
		return "", err
	}
	// If the holder is still running now, its lock covered FlowNet's whole run: the node's
	// job met the held lock, whatever FlowNet then made of it.
	_, holderDone := p.Exited()
	covered := !holderDone
	if err := waitExit(ctx, "standalone kSQL-Flow", p); err != nil {
		return "", err
	}
	holderRes, _ := p.Exited()
	id, err := w.nodeID(node)
	if err != nil {
		return "", err
	}
	atts, err := w.attemptsOf(ctx, id)
	if err != nil {
		return "", err
	}
	states, err := w.nodeStates(ctx)
	if err != nil {
		return "", err
	}
	st := states[id]
	var last kintoneapi.Record
	if len(atts) > 0 {
		last = atts[len(atts)-1]
	}
	deferred := st.Str("status") == "WAITING" && st.Str("status_reason") == "PREPARE_FAILED"
	conflictCode := last.Str("result_code") == "PREPARE_FAILED" || last.Str("result_code") == "LOCK_CONFLICT"
	switch {
	case holderRes.ExitCode == 0 && (covered || deferred || conflictCode):
		return "STANDALONE_FIRST", nil
	case holderRes.ExitCode != 0:
		return "N1_FIRST", nil
	default:
		return fmt.Sprintf("NO_CONFLICT (holder released before FlowNet finished; node %s/%s, attempt %s/%s)", st.Str("status"), st.Str("status_reason"), last.Str("status"), last.Str("result_code")), nil
	}
}
