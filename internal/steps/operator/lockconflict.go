package operator

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

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// lockConflictDomain: a standalone kSQL-Flow ("the holder") holds a node's job lock while
// FlowNet runs the network (m5-lock-conflict). The holder runs from its own working
// directory, so it reaches the distributed job lock in the JOB log instead of colliding on
// kSQL-Flow's per-directory local lock.
type lockConflictDomain struct{}

func (d lockConflictDomain) register(reg stepdef.Registry) {
	reg.Step(kit.ExprRunWhileHolderHoldsLock, d.runWhileTheHolderHoldsTheLock)
	reg.Step(kit.ExprResumeWhileHolderHoldsLock, d.resumeWhileTheHolderHoldsTheLock)
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
	lastAttempt  kit.NodeAttempt
	nodeStateNow kit.NodeState
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
	sc := kit.SceneOf(ctx)
	fx := kit.FixturesOf(ctx)
	var classes []string
	for trial := 1; trial <= maxOrderTrials; trial++ {
		if trial > 1 {
			if err := fx.SwitchToTrialScope(ctx, sc, trial); err != nil {
				return err
			}
		}
		names := trialNames{dir: fmt.Sprintf("holder-cwd-%d", trial), barrier: fmt.Sprintf("holder read, trial %d", trial), holder: fmt.Sprintf("holder-trial-%d", trial)}
		out, err := lockConflictTrial(ctx, names, node, sql,
			func(ctx context.Context) (*kit.FlownetCall, error) {
				return kit.RunNetwork(ctx, fmt.Sprintf("flownet-trial-%d", trial))
			})
		if err != nil {
			return err
		}
		sc.St.Note(fmt.Sprintf("lock-conflict trial %d (scope %s)", trial, fx.Scope().ID()), out.String())
		classes = append(classes, fmt.Sprintf("trial %d: %s", trial, out.class))
		if out.class == standaloneFirst {
			break
		}
		// Without a conflict the node had the lock to itself: anything but SUCCESS is a
		// failure of its own, not an ordering accident to retry.
		if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal(fmt.Sprintf("last attempt of %s in trial %d without a conflict", node, trial), "SUCCESS", kit.OrNone(out.lastAttempt.Status)); err != nil {
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
	return sc.St.On("output.ksql-flow.run.result.resultCode").Assert("job lock conflict observed", standaloneFirst+" within 3 trials", seen, strings.HasSuffix(last, standaloneFirst))
}

// resumeWhileTheHolderHoldsTheLock is the same ordering for a resume of the run by its id
// (m8-02: a CANCELLED / PREPARE_FAILED Attempt between failures). A resume belongs to its
// run, so there is one trial and no fresh sub-scope: the hold (the holder's JOB log row
// RUNNING and its first read of 顧客管理 held before FlowNet starts) makes the order certain.
func (lockConflictDomain) resumeWhileTheHolderHoldsTheLock(ctx context.Context, name, node, sql string) error {
	sc := kit.SceneOf(ctx)
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	names := trialNames{dir: "holder-cwd-resume", barrier: "holder read, " + name, holder: "holder of " + name}
	out, err := lockConflictTrial(ctx, names, node, sql,
		func(ctx context.Context) (*kit.FlownetCall, error) {
			if err := kit.SnapshotAttempts(ctx, name); err != nil {
				return nil, err
			}
			return kit.RunNetworkWith(ctx, name, nil, "--resume-run", id)
		})
	if err != nil {
		return err
	}
	sc.St.Note("lock-conflict resume "+name, out.String())
	return sc.St.On("output.ksql-flow.run.result.resultCode").Equal("job lock conflict observed by "+name, standaloneFirst, out.class)
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
func lockConflictTrial(ctx context.Context, names trialNames, name, sql string, start func(context.Context) (*kit.FlownetCall, error)) (trialOutcome, error) {
	var out trialOutcome
	h, err := startHolder(ctx, names, name, sql)
	if err != nil {
		return out, err
	}
	if err := h.waitHoldsLock(ctx, sql); err != nil {
		return out, err
	}
	h.hold.Reached = true
	out.toRunning = time.Since(h.proc.Proc.Started())
	c, err := start(ctx)
	if err != nil {
		return out, err
	}
	if err := c.Finish(ctx); err != nil {
		return out, err
	}
	out.flownetTime = c.Result.Duration
	// If the holder is still running now, its lock covered FlowNet's whole run: the node's
	// job met the held lock, whatever FlowNet then made of it.
	_, holderDone := h.proc.Proc.Exited()
	out.holdCovered = !holderDone
	if err := proxy.KsqlProxyKey.Of(kit.SceneOf(ctx).St).Release(h.hold); err != nil {
		return out, err
	}
	holderRes, err := kit.WaitExit(ctx, h.proc.Name, h.proc.Proc)
	if err != nil {
		return out, err
	}
	out.holderTime = holderRes.Duration
	out.holderExit = holderRes.String()
	return out, classifyTrial(ctx, &out, h.node.ID, holderRes.ExitCode)
}

// trialHolder is the standalone kSQL-Flow of one trial: the node whose job it runs, its
// attempt id, the barrier that holds its first read, the process.
type trialHolder struct {
	node      scope.RenderedNode
	attemptID string
	hold      *proxy.BarrierEntry
	proc      *kit.NamedProc
}

// startHolder renders sql for node name's job in the trial's own directory (never FlowNet's)
// and starts the holder on it, its first read of 顧客管理 held by a barrier.
func startHolder(ctx context.Context, names trialNames, name, sql string) (*trialHolder, error) {
	sc := kit.SceneOf(ctx)
	fx := kit.FixturesOf(ctx)
	node, err := fx.Node(name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(sc.St.WorkDir, names.dir)
	fnDir := kit.FlownetDir(sc)
	same := strings.EqualFold(filepath.Clean(dir), filepath.Clean(fnDir))
	if err := sc.St.On("process.working-directory").Assert("holder's working directory against FlowNet's (case-insensitive)", "different", dir+" | "+fnDir, !same); err != nil {
		return nil, err
	}
	src, err := sc.Suite.FixtureFile(scope.FixtureJobs, sql)
	if err != nil {
		return nil, err
	}
	sqlPath := filepath.Join(dir, "job", filepath.FromSlash(src.Name))
	jobID, err := fx.Scope().RenderSQL(src.Path, sqlPath, node.FixtureJobID, nil)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", sql, err)
	}
	h := &trialHolder{node: node, attemptID: fx.Scope().ID() + "_holder"}
	// The holder keeps its lock while its first read of 顧客管理 is held by a barrier of the
	// scenario's kSQL-Flow proxy (proxy/ksqlproxy.go); the barrier is released only once FlowNet's
	// run has met the lock and ended. The window is forced, not hoped for from a slow tenant.
	if h.hold, err = proxy.HoldReadBarrier(ctx, names.barrier, target.RoleCustomers); err != nil {
		return nil, err
	}
	t, kp := sc.Suite.Target, proxy.KsqlProxyKey.Of(sc.St)
	path, argv := t.KsqlFlow.With("run", "-f", sqlPath,
		"--result-json", filepath.Join(dir, "holder-result.json"),
		"--correlation-id", fx.Scope().ID()+"_holder", "--attempt-id", h.attemptID, "--expected-job-id", jobID,
		"--profile", t.Profile, "--config", kp.KintoneConfig())
	env := append(append(append([]string(nil), t.BaseEnv...), t.KsqlFlowEnv()...), kp.ChildEnv()...)
	h.proc = &kit.NamedProc{Name: names.holder, Kind: kit.KindKsqlFlow, Role: "holder"}
	if err := kit.StartChild(ctx, h.proc, proc.Spec{Path: path, Args: argv, Env: env, Dir: dir}); err != nil {
		return nil, err
	}
	p := h.proc.Proc
	h.hold.Ended = func() (string, bool) {
		if res, done := p.Exited(); done {
			return fmt.Sprintf("the holder exited (%s)", res), true
		}
		return "", false
	}
	return h, nil
}

// waitHoldsLock waits until the holder's JOB log row is RUNNING (the job lock is taken) and
// its read is held (it cannot let go of the lock before the barrier is released): only then
// does FlowNet start.
func (h *trialHolder) waitHoldsLock(ctx context.Context, sql string) error {
	sc := kit.SceneOf(ctx)
	kp, p := proxy.KsqlProxyKey.Of(sc.St), h.proc.Proc
	return wait.For(ctx, wait.JobLogRunning, "the holder's JOB log row to be RUNNING and its first read of 顧客管理 held", func(ctx context.Context) (bool, string, error) {
		held := kp.Held(h.hold.ID)
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
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", h.attemptID))
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
}

// classifyTrial reads what the trial left on node nodeID and says which side met the other's
// lock: the holder first when it succeeded while its hold covered FlowNet's run or FlowNet
// deferred or failed the node on the lock; FlowNet's node first when the holder failed.
func classifyTrial(ctx context.Context, out *trialOutcome, nodeID string, holderExit int) error {
	atts, err := kit.AttemptsOf(ctx, nodeID)
	if err != nil {
		return err
	}
	states, err := kit.NodeStates(ctx)
	if err != nil {
		return err
	}
	out.nodeStateNow = states[nodeID]
	if len(atts) > 0 {
		out.lastAttempt = atts[len(atts)-1]
	}
	out.node = fmt.Sprintf("%s/%s, last attempt %s/%s", kit.OrNone(out.nodeStateNow.Status), kit.OrNone(out.nodeStateNow.StatusReason), kit.OrNone(out.lastAttempt.Status), kit.OrNone(out.lastAttempt.ResultCode))
	deferred := out.nodeStateNow.Status == "WAITING" && out.nodeStateNow.StatusReason == "PREPARE_FAILED"
	conflictCode := out.lastAttempt.ResultCode == "PREPARE_FAILED" || out.lastAttempt.ResultCode == "LOCK_CONFLICT"
	switch {
	case holderExit == 0 && (out.holdCovered || deferred || conflictCode):
		out.class = standaloneFirst
	case holderExit != 0:
		out.class = n1First
	default:
		out.class = noConflict
	}
	return nil
}
