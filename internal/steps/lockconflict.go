package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
)

// lockConflictDomain: a standalone kSQL-Flow ("the holder") holds a node's job lock while
// FlowNet runs the network (m5-lock-conflict). The holder runs from its own working
// directory, so it reaches the distributed job lock in the JOB log instead of colliding on
// kSQL-Flow's per-directory local lock.
type lockConflictDomain struct{}

func (d lockConflictDomain) register(reg stepdef.Registry) {
	reg.Step(exprRunWhileHolderHoldsLock, d.runWhileTheHolderHoldsTheLock)
	reg.Step(exprResumeWhileHolderHoldsLock, d.resumeWhileTheHolderHoldsTheLock)
}

// Lock-conflict ordering trials (the original's MAX_ORDER_ATTEMPTS).
const maxOrderTrials = 3

// Trial classifications (the original harness's names).
const (
	standaloneFirst = "STANDALONE_FIRST" // the holder held the lock while FlowNet met it
	n1First         = "N1_FIRST"         // FlowNet's node took the lock first; the holder failed
	noConflict      = "NO_CONFLICT"      // the holder was done before FlowNet reached the node
)

// trialOutcome is what one ordering trial observed.
type trialOutcome struct {
	class        string
	holderExit   string
	node         string // the node's state and its last attempt
	holdCovered  bool   // the holder was still running when FlowNet exited
	toRunning    time.Duration
	flownetTime  time.Duration
	holderTime   time.Duration
	lastAttempt  nodeAttempt
	nodeStateNow nodeState
}

func (t trialOutcome) String() string {
	return fmt.Sprintf("%s (holder %s; node %s; hold covered FlowNet's run: %t; holder RUNNING after %s, FlowNet %s, holder %s)",
		t.class, t.holderExit, t.node, t.holdCovered, t.toRunning.Round(time.Millisecond), t.flownetTime.Round(time.Millisecond), t.holderTime.Round(time.Millisecond))
}

// runWhileTheHolderHoldsTheLock: the holder takes the job lock of node's job first, and
// only once its JOB log row is RUNNING and its first business read is held by a barrier does
// FlowNet start; the barrier is released when FlowNet's run has ended, so the hold covers it
// on a tenant of any speed. If the holder was nevertheless done before FlowNet reached the
// node, the ordering is retried under a fresh sub-scope, up to three trials (the original's
// MAX_ORDER_ATTEMPTS). Every trial's evidence goes into the scenario record.
func (lockConflictDomain) runWhileTheHolderHoldsTheLock(ctx context.Context, node, sql string) error {
	sc := sceneOf(ctx)
	fx := fixturesOf(ctx)
	var classes []string
	for trial := 1; trial <= maxOrderTrials; trial++ {
		if trial > 1 {
			if err := fx.switchToTrialScope(ctx, sc, trial); err != nil {
				return err
			}
		}
		names := trialNames{dir: fmt.Sprintf("holder-cwd-%d", trial), barrier: fmt.Sprintf("holder read, trial %d", trial), holder: fmt.Sprintf("holder-trial-%d", trial)}
		out, err := lockConflictTrial(ctx, names, node, sql,
			func(ctx context.Context) (*flownetCall, error) {
				return runNetwork(ctx, fmt.Sprintf("flownet-trial-%d", trial))
			})
		if err != nil {
			return err
		}
		sc.st.Note(fmt.Sprintf("lock-conflict trial %d (scope %s)", trial, fx.scope().ID()), out.String())
		classes = append(classes, fmt.Sprintf("trial %d: %s", trial, out.class))
		if out.class == standaloneFirst {
			break
		}
		// Without a conflict the node had the lock to itself: anything but SUCCESS is a
		// failure of its own, not an ordering accident to retry.
		if err := sc.st.Equal(fmt.Sprintf("last attempt of %s in trial %d without a conflict", node, trial), "SUCCESS", orNone(out.lastAttempt.Status)); err != nil {
			return err
		}
	}
	last := classes[len(classes)-1]
	seen := strings.Join(classes, "; ")
	if !strings.HasSuffix(last, standaloneFirst) {
		code := "M5_LOCK_CONFLICT_NOT_OBSERVED"
		if allEndWith(classes, n1First) {
			code = "M5_LOCK_ORDER_REVERSED"
		}
		seen = code + ": " + seen
	}
	return sc.st.Assert("job lock conflict observed", standaloneFirst+" within 3 trials", seen, strings.HasSuffix(last, standaloneFirst))
}

// resumeWhileTheHolderHoldsTheLock is the same ordering for a resume of the run by its id
// (m8-02: a CANCELLED / PREPARE_FAILED Attempt between failures). A resume belongs to its
// run, so there is one trial and no fresh sub-scope: the hold (the holder's JOB log row
// RUNNING and its first read of 顧客管理 held before FlowNet starts) makes the order certain.
func (lockConflictDomain) resumeWhileTheHolderHoldsTheLock(ctx context.Context, name, node, sql string) error {
	sc := sceneOf(ctx)
	id, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	names := trialNames{dir: "holder-cwd-resume", barrier: "holder read, " + name, holder: "holder of " + name}
	out, err := lockConflictTrial(ctx, names, node, sql,
		func(ctx context.Context) (*flownetCall, error) {
			if err := snapshotAttempts(ctx, name); err != nil {
				return nil, err
			}
			return runNetworkWith(ctx, name, nil, "--resume-run", id)
		})
	if err != nil {
		return err
	}
	sc.st.Note("lock-conflict resume "+name, out.String())
	return sc.st.Equal("job lock conflict observed by "+name, standaloneFirst, out.class)
}

func allEndWith(list []string, suffix string) bool {
	for _, s := range list {
		if !strings.HasSuffix(s, suffix) {
			return false
		}
	}
	return len(list) > 0
}

// trialNames name what one ordering trial makes: the holder's working directory, the
// barrier that holds its read, the holder process.
type trialNames struct{ dir, barrier, holder string }

// lockConflictTrial starts the holder on node name's job with sql, and FlowNet by start once
// the holder holds the lock.
func lockConflictTrial(ctx context.Context, names trialNames, name, sql string, start func(context.Context) (*flownetCall, error)) (trialOutcome, error) {
	sc := sceneOf(ctx)
	fx := fixturesOf(ctx)
	var out trialOutcome
	node, err := fx.node(name)
	if err != nil {
		return out, err
	}
	dir := filepath.Join(sc.st.WorkDir, names.dir)
	fnDir := flownetDir(sc)
	same := strings.EqualFold(filepath.Clean(dir), filepath.Clean(fnDir))
	if err := sc.st.Assert("holder's working directory against FlowNet's (case-insensitive)", "different", dir+" | "+fnDir, !same); err != nil {
		return out, err
	}
	src, err := sc.suite.fixtureFile(scope.FixtureJobs, sql)
	if err != nil {
		return out, err
	}
	sqlPath := filepath.Join(dir, "job", filepath.FromSlash(src.Name))
	jobID, err := fx.scope().RenderSQL(src.Path, sqlPath, node.FixtureJobID, nil)
	if err != nil {
		return out, fmt.Errorf("render %s: %w", sql, err)
	}
	attemptID := fx.scope().ID() + "_holder"
	// The holder keeps its lock while its first read of 顧客管理 is held by a barrier of the
	// scenario's kSQL-Flow proxy (ksqlproxy.go); the barrier is released only once FlowNet's
	// run has met the lock and ended. The window is forced, not hoped for from a slow tenant.
	hold, err := holdReadBarrier(ctx, names.barrier, target.RoleCustomers)
	if err != nil {
		return out, err
	}
	t, kp := sc.suite.Target, ksqlProxyKey.Of(sc.st)
	path, argv := t.KsqlFlow.With("run", "-f", sqlPath,
		"--result-json", filepath.Join(dir, "holder-result.json"),
		"--correlation-id", fx.scope().ID()+"_holder", "--attempt-id", attemptID, "--expected-job-id", jobID,
		"--profile", t.Profile, "--config", kp.kintoneConfig())
	env := append(append(append([]string(nil), t.BaseEnv...), t.KsqlFlowEnv()...), kp.childEnv()...)
	holder := &namedProc{name: names.holder, kind: kindKsqlFlow, role: "holder"}
	if err := startChild(ctx, holder, proc.Spec{Path: path, Args: argv, Env: env, Dir: dir}); err != nil {
		return out, err
	}
	p := holder.proc
	hold.ended = func() (string, bool) {
		if res, done := p.Exited(); done {
			return fmt.Sprintf("the holder exited (%s)", res), true
		}
		return "", false
	}
	// FlowNet starts only once the holder's JOB log row is RUNNING (the job lock is taken) and
	// its read is held (it cannot let go of the lock before the barrier is released).
	err = wait.For(ctx, wait.JobLogRunning, "the holder's JOB log row to be RUNNING and its first read of 顧客管理 held", func(ctx context.Context) (bool, string, error) {
		held := kp.held(hold.id)
		if res, done := p.Exited(); done {
			if res.ExitCode == 0 {
				// Exit 0 means it took the lock and released it: its reads never met the barrier.
				return false, "", wait.Permanent(fmt.Errorf("the holder finished (%s) without its read of 顧客管理 being held: %s reads no app the hold matches", res, sql))
			}
			return false, "", wait.Permanent(fmt.Errorf("the holder exited %s before it held the lock: %s", res, p.StderrTail()))
		}
		if !held {
			return false, "read not held yet", nil
		}
		rows, err := readExact(ctx, sc, target.RoleLog, decodeJobLogRow, match{"attempt_id", attemptID})
		if err != nil {
			return false, "", err
		}
		for _, r := range rows {
			if r.Status == "RUNNING" {
				return true, "RUNNING, read held", nil
			}
		}
		return false, fmt.Sprintf("read held; %d JOB log rows, none RUNNING", len(rows)), nil
	})
	if err != nil {
		return out, err
	}
	hold.reached = true
	out.toRunning = time.Since(p.Started())
	c, err := start(ctx)
	if err != nil {
		return out, err
	}
	if err := c.finish(ctx); err != nil {
		return out, err
	}
	out.flownetTime = c.result.Duration
	// If the holder is still running now, its lock covered FlowNet's whole run: the node's
	// job met the held lock, whatever FlowNet then made of it.
	_, holderDone := p.Exited()
	out.holdCovered = !holderDone
	if err := kp.release(hold); err != nil {
		return out, err
	}
	holderRes, err := waitExit(ctx, holder.name, p)
	if err != nil {
		return out, err
	}
	out.holderTime = holderRes.Duration
	out.holderExit = holderRes.String()
	atts, err := attemptsOf(ctx, node.ID)
	if err != nil {
		return out, err
	}
	states, err := nodeStates(ctx)
	if err != nil {
		return out, err
	}
	out.nodeStateNow = states[node.ID]
	if len(atts) > 0 {
		out.lastAttempt = atts[len(atts)-1]
	}
	out.node = fmt.Sprintf("%s/%s, last attempt %s/%s", orNone(out.nodeStateNow.Status), orNone(out.nodeStateNow.StatusReason), orNone(out.lastAttempt.Status), orNone(out.lastAttempt.ResultCode))
	deferred := out.nodeStateNow.Status == "WAITING" && out.nodeStateNow.StatusReason == "PREPARE_FAILED"
	conflictCode := out.lastAttempt.ResultCode == "PREPARE_FAILED" || out.lastAttempt.ResultCode == "LOCK_CONFLICT"
	switch {
	case holderRes.ExitCode == 0 && (out.holdCovered || deferred || conflictCode):
		out.class = standaloneFirst
	case holderRes.ExitCode != 0:
		out.class = n1First
	default:
		out.class = noConflict
	}
	return out, nil
}
