package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/harness/stepdef"
)

func addLockSteps(reg stepdef.Registry) {
	reg.Step(`^the job lock of node "([^"]+)" is recovered by a named confirmer with this scenario's record as evidence$`, func(ctx context.Context, node string) error {
		w := worldFrom(ctx)
		_, err := w.recoverJobLock(ctx, node)
		return err
	})
	reg.Step(`^the job lock recovery outcome is one of "([^"]+)"$`, func(ctx context.Context, list string) error {
		w := worldFrom(ctx)
		if w.recovery == nil {
			return fmt.Errorf("no job lock recovery was made")
		}
		outcome, _ := w.recovery["outcome"].(string)
		if outcome == "" {
			// Not locked at inspection: nothing to release.
			outcome = "NOT_RUNNING"
			if s, ok := w.recovery["inspection"].(string); ok {
				outcome = s
			}
		}
		allowed := map[string]bool{}
		for _, o := range strings.Split(list, ",") {
			allowed[strings.TrimSpace(o)] = true
		}
		return w.st.Assert("job lock recovery outcome", list, outcome, allowed[outcome])
	})
}

// confirmer is who confirms a force-unlock: --confirmed-by, else (sandbox) the scope's
// principal. Live mode refuses kill scenarios without --confirmed-by before anything runs.
func (w *world) confirmer() string {
	if w.suite.ConfirmedBy != "" {
		return w.suite.ConfirmedBy
	}
	return w.scope.Principal("confirmer")
}

// evidenceRef is the file URI of this scenario's record in the archive.
func (w *world) evidenceRef() string {
	p := filepath.ToSlash(filepath.Join(w.suite.ArchiveDir, "scenarios", w.st.ID+".json"))
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// recoverJobLock inspects the job lock of node's job and, only if it is held, force-unlocks
// it with a named confirmer and the scenario record as evidence. Both machine outputs are
// kept as evidence of the cleanup.
func (w *world) recoverJobLock(ctx context.Context, node string) (map[string]any, error) {
	jobID := ""
	if w.network != nil {
		jobID = w.network.JobIDs[node]
	}
	if jobID == "" {
		return nil, fmt.Errorf("no job id for node %q", node)
	}
	jobKey := w.suite.Target.Profile + ":" + jobID
	dir := filepath.Join(w.st.WorkDir, "lock-recovery")
	inspect, err := w.ksqlFlowJSON(ctx, "ksql-flow-inspect-lock", dir, "LOCK_INSPECTION_RESULT",
		w.ksqlFlowArgs("inspect-lock", "--job-key", jobKey, "--json")...)
	if err != nil {
		return nil, err
	}
	rec := map[string]any{"job_key": jobKey, "inspection": "NOT_RUNNING"}
	locked, _ := inspect["locked"].(bool)
	if err := w.st.Assert("inspect-lock "+jobKey+" answered", "locked true/false", fmt.Sprint(inspect["locked"]), inspect["locked"] != nil); err != nil {
		return nil, err
	}
	if locked {
		out, err := w.ksqlFlowJSON(ctx, "ksql-flow-force-unlock-job", dir, "LOCK_RECOVERY_RESULT",
			w.ksqlFlowArgs("force-unlock-job", "--job-key", jobKey,
				"--reason", w.scope.Reason("kill-cleanup"),
				"--confirmed-by", w.confirmer(),
				"--evidence-ref", w.evidenceRef(), "--json")...)
		if err != nil {
			return nil, err
		}
		rec["outcome"] = out["outcome"]
	}
	w.recovery = rec
	return rec, nil
}

// ksqlFlowJSON runs a kSQL-Flow machine-JSON command, requires exit 0 and returns the last
// stdout line whose kind matches.
func (w *world) ksqlFlowJSON(ctx context.Context, name, dir, kind string, args ...string) (map[string]any, error) {
	p, err := w.ksqlFlow(ctx, name, dir, args...)
	if err != nil {
		return nil, err
	}
	if err := waitExit(ctx, name, p); err != nil {
		return nil, err
	}
	res, _ := p.Exited()
	if err := w.st.Equal("exit code of "+name, 0, res.ExitCode); err != nil {
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
	b, _ := json.Marshal(obj)
	fmt.Fprintf(w.st.Log, "  %s: %s\n", name, b)
	return obj, nil
}
