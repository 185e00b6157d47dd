package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// jobLockDomain: kSQL-Flow's job lock (the JOB log row holding `<profile>:<job_id>`) — its
// inspection after a kill and its recovery by a named operator, through kSQL-Flow's own
// operator commands (`inspect-lock`, `force-unlock-job`).
type jobLockDomain struct{}

func (d jobLockDomain) register(reg stepdef.Registry) {
	reg.Step(`^the job lock of node "([^"]+)" is held by the killed attempt$`, d.heldByTheKilledAttempt)
	reg.Step(`^the job lock of node "([^"]+)" is recovered by a named confirmer with this scenario's record as evidence$`, d.recovered)
	reg.Step(`^the job lock recovery released the lock the inspection saw$`, d.releasedWhatWasInspected)
}

// jobLockState keeps the inspection after the kill and the recovery's result.
type jobLockState struct {
	inspection map[string]any // LOCK_INSPECTION_RESULT right after the kill
	recovery   map[string]any // LOCK_RECOVERY_RESULT
}

var jobLockKey = scenario.NewKey[jobLockState]("joblocks")

// recovered says whether a step recovered a job lock (the kill's cleanup then need not).
func (s *jobLockState) recovered() bool { return s.recovery != nil }

// recoveryResult is the LOCK_RECOVERY_RESULT the scenario's recovery printed.
func (s *jobLockState) recoveryResult() (map[string]any, error) {
	if s.recovery == nil {
		return nil, fmt.Errorf("no job lock was recovered yet (the job lock of node … is recovered by a named confirmer …)")
	}
	return s.recovery, nil
}

// jobKey is the job lock key of a fixture node: `<profile>:<job_id>`.
func jobKey(sc *kit.Scene, fx *kit.FixtureState, name string) (string, error) {
	node, err := fx.Node(name)
	if err != nil {
		return "", err
	}
	return sc.Suite.Target.Profile + ":" + node.JobID, nil
}

// heldByTheKilledAttempt inspects the job lock right after the kill: it must be held, by
// the killed attempt's execution (batch id) since its start (the JOB log row's).
func (jobLockDomain) heldByTheKilledAttempt(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	row, err := killKey.Of(sc.St).killedRow(name)
	if err != nil {
		return err
	}
	key, err := jobKey(sc, kit.FixturesOf(ctx), name)
	if err != nil {
		return err
	}
	out, err := ksqlFlowJSON(ctx, sc, "ksql-flow-inspect-lock", "LOCK_INSPECTION_RESULT",
		"inspect-lock", "--job-key", key, "--json")
	if err != nil {
		return err
	}
	jobLockKey.Of(sc.St).inspection = out
	sc.St.Note("inspect-lock "+key+" after the kill", compactJSON(out))
	if err := sc.St.On("output.ksql-flow.inspect-lock.json.locked").Equal("inspect-lock "+key+" locked", "true", fmt.Sprint(out["locked"])); err != nil {
		return err
	}
	rec, _ := out["record"].(map[string]any)
	batch, _ := rec["batchId"].(string)
	if err := sc.St.On("output.ksql-flow.inspect-lock.json.record.batchId", "joblog.batch_id").Equal("batch id holding "+key+" against the killed attempt's JOB log row", row.BatchID, kit.OrNone(batch)); err != nil {
		return err
	}
	// JOB log DATETIMEs have minute precision on kintone, so the start is compared by minute.
	// Which of the row's two starts inspect-lock reports is not pinned by the contract (§11:
	// record.startedAt): the row's started_at, written when the lock was taken, or the durable
	// start marker runner_execution_started_at written just after; the sandbox reports the
	// marker. The two can straddle a minute boundary, so either minute is the lock's start —
	// a start from any other minute (another attempt's lock) still fails.
	started, _ := rec["startedAt"].(string)
	want := []string{MinuteOf(row.StartedAt), MinuteOf(row.RunnerExecutionStartedAt)}
	seen := MinuteOf(started)
	return sc.St.On("output.ksql-flow.inspect-lock.json.record.startedAt", "joblog.started_at").Assert("start of the lock holding "+key+" against the JOB log row (minute)",
		"the minute of started_at or runner_execution_started_at: "+strings.Join(slices.Compact(want), " or "), seen, slices.Contains(want, seen))
}

func MinuteOf(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "unreadable:" + kit.OrNone(s)
	}
	return t.UTC().Truncate(time.Minute).Format(time.RFC3339)
}

func (jobLockDomain) recovered(ctx context.Context, name string) error {
	_, err := recoverJobLock(ctx, kit.SceneOf(ctx), kit.FixturesOf(ctx), name)
	return err
}

// releasedWhatWasInspected: the recovery must be RELEASED of the lock the inspection saw.
// NOT_FOUND or NOT_RUNNING are accepted only when the inspection found no lock held.
func (jobLockDomain) releasedWhatWasInspected(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	js := jobLockKey.Of(sc.St)
	if js.inspection == nil || js.recovery == nil {
		return fmt.Errorf("need an inspection after the kill and a recovery (inspection made: %t, recovery made: %t)", js.inspection != nil, js.recovery != nil)
	}
	outcome, _ := js.recovery["outcome"].(string)
	if locked, _ := js.inspection["locked"].(bool); !locked {
		sc.St.Note("job lock recovery", "the inspection found no held lock, so "+kit.OrNone(outcome)+" is accepted")
		return sc.St.On("output.ksql-flow.force-unlock-job.json.outcome").Assert("job lock recovery outcome", "NOT_FOUND or NOT_RUNNING (no lock was held)", kit.OrNone(outcome), outcome == "NOT_FOUND" || outcome == "NOT_RUNNING")
	}
	if err := sc.St.On("output.ksql-flow.force-unlock-job.json.outcome").Equal("job lock recovery outcome", "RELEASED", kit.OrNone(outcome)); err != nil {
		return err
	}
	rec, _ := js.inspection["record"].(map[string]any)
	before, _ := js.recovery["before"].(map[string]any)
	inspected, _ := rec["batchId"].(string)
	released, _ := before["batchId"].(string)
	return sc.St.On("output.ksql-flow.force-unlock-job.json.before.batchId").Equal("batch id released against the one inspected", kit.OrNone(inspected), kit.OrNone(released))
}

// recoverJobLock force-unlocks the job lock of a node with a named confirmer and the
// scenario record as evidence. It runs from a step or from the cleanup (outside the
// scenario's context), so it takes its scene and fixtures explicitly.
func recoverJobLock(ctx context.Context, sc *kit.Scene, fx *kit.FixtureState, name string) (map[string]any, error) {
	key, err := jobKey(sc, fx, name)
	if err != nil {
		return nil, err
	}
	out, err := ksqlFlowJSON(ctx, sc, "ksql-flow-force-unlock-job", "LOCK_RECOVERY_RESULT",
		"force-unlock-job", "--job-key", key,
		"--reason", fx.Scope().Reason("kill-cleanup"),
		"--confirmed-by", confirmer(sc, fx),
		"--evidence-ref", evidenceRef(sc), "--json")
	if err != nil {
		return nil, err
	}
	jobLockKey.Of(sc.St).recovery = out
	sc.St.Note("force-unlock-job "+key, compactJSON(out))
	return out, nil
}

// confirmer is who confirms a force-unlock: --confirmed-by, else (sandbox) the scope's
// principal. Live mode refuses scenarios that need a confirmer without one, before anything
// runs.
func confirmer(sc *kit.Scene, fx *kit.FixtureState) string {
	if sc.Suite.ConfirmedBy != "" {
		return sc.Suite.ConfirmedBy
	}
	return fx.Scope().Principal("confirmer")
}

// evidenceRef is the file URI of this scenario's record in the archive.
func evidenceRef(sc *kit.Scene) string {
	p := filepath.ToSlash(filepath.Join(sc.Suite.ArchiveDir, "scenarios", sc.St.ID+".json"))
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// startKsqlFlow starts one kSQL-Flow operator command in dir with the target's kSQL-Flow
// environment and profile, reaching kintone through the scenario's kSQL-Flow proxy (its config
// copy and CA bundle), so what it sends counts with the children's (proxy/ksqlproxy.go).
func startKsqlFlow(ctx context.Context, sc *kit.Scene, name, dir string, args ...string) (*proc.Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kp := proxy.KsqlProxyKey.Of(sc.St)
	if err := kp.Ensure(ctx, sc); err != nil {
		return nil, err
	}
	t := sc.Suite.Target
	path, argv := t.KsqlFlow.With(append(args, "--profile", t.Profile, "--config", kp.KintoneConfig())...)
	env := append(append(append([]string(nil), t.BaseEnv...), t.KsqlFlowEnv()...), kp.ChildEnv()...)
	return proc.Start(ctx, proc.Spec{Name: name, Path: path, Args: argv, Env: env, Dir: dir, LogDir: sc.St.WorkDir})
}

// ksqlFlowJSON runs a kSQL-Flow machine-JSON operator command, requires exit 0 and returns
// the JSON line of kind.
func ksqlFlowJSON(ctx context.Context, sc *kit.Scene, name, kind string, args ...string) (map[string]any, error) {
	p, err := startKsqlFlow(ctx, sc, name, filepath.Join(sc.St.WorkDir, "operator"), args...)
	if err != nil {
		return nil, err
	}
	res, err := kit.WaitExit(ctx, name, p)
	if err != nil {
		return nil, err
	}
	if err := sc.St.On("exit.ksql-flow.inspect-lock", "exit.ksql-flow.force-unlock-job").Equal("exit code of "+name, 0, res.ExitCode); err != nil {
		return nil, fmt.Errorf("%w: %s", err, p.StderrTail())
	}
	out, err := p.Stdout()
	if err != nil {
		return nil, err
	}
	obj, ok := proc.LastJSONLine(out, func(o map[string]any) bool { return o["kind"] == kind })
	if !ok {
		return nil, fmt.Errorf("%s printed no %s JSON line: %q", name, kind, out)
	}
	return obj, nil
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
