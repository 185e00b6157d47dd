package requests

import (
	"context"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// closeRaceDomain: a CLOSE (archive-run) and a resume of the same FAILED Run started at once
// with nothing forcing their order (ext-06, the free-race sibling of p2-16-05). The Network
// lock serialises them, so exactly one of the orders it allows holds; the step names which
// one (the outcome branch `flowtest explore` counts) after comparing everything each process
// printed and what the Run's records show with that order's expectation.
type closeRaceDomain struct{}

func (d closeRaceDomain) register(reg stepdef.Registry) {
	reg.Step(`^the archive "([^"]+)" and the resume "([^"]+)" settled in one of the orders the Network lock allows, judged on node "([^"]+)"$`, d.settledByTheLock)
}

// closeRaceBranch is one order the Network lock allows and everything it leaves.
type closeRaceBranch struct {
	name string
	// The archive's exit code and JSON union; the resume's exit and what it said (refused
	// with a code, or the RESUME summary of this run); the Run's status and lifecycle; the
	// node's attempt numbers, all FAILED.
	archiveExit  int
	archive      string
	resumeExit   int
	resume       string
	run          string
	attemptsSeen string
}

func (b closeRaceBranch) observed() string {
	return fmt.Sprintf("archive exit %d %s; resume exit %d %s; run %s; attempts %s",
		b.archiveExit, b.archive, b.resumeExit, b.resume, b.run, b.attemptsSeen)
}

// closeRaceBranches are the orders of product-contract §1.3.1 and §1.9 under the Network
// lock (§8 invariant 2), for a Run whose one node failed once:
//   - the CLOSE takes the lock first and the resume's lock write lands while it holds it:
//     the resume is refused LOCK_CONFLICT before touching the Run;
//   - the resume's lock insert is refused while the CLOSE holds the lock (kintone's
//     unique-key CB_VA01), but the CLOSE releases it (tombstoning the key) before the
//     resume's adjudicating re-read: §3.7 "else LOCK_UNAVAILABLE" — the re-read finds no
//     RUNNING lock, so the outcome of the insert cannot be confirmed; the Run is untouched;
//   - the CLOSE's whole locked section ends before the resume's lock write: the resume,
//     re-reading the Run inside its lock, finds it ARCHIVED (RUN_NOT_RESUMABLE);
//   - the resume takes the lock first and the CLOSE's lock write lands while it holds it:
//     REJECTED / LOCK_CONFLICT, holding nothing (lock_released true), the Run stays ACTIVE
//     and gets its second (FAILED) attempt — p2-16-05's forced order;
//   - the resume's whole locked section ends before the CLOSE's lock write: the Run ends
//     FAILED with two attempts, then it is archived.
//
// The last branch is named without an order: a resume that ran on an already ARCHIVED Run
// (a bug) leaves the same records and output, and only the order of the writes tells them
// apart (the invariant no-attempt-after-close of `flowtest explore`).
func closeRaceBranches(node string) []closeRaceBranch {
	archived := "outcome=ARCHIVED audit=RECORDED lock_released=true"
	rejected := "outcome=REJECTED code=LOCK_CONFLICT lock_released=true"
	ran := "RESUME of the run, aggregate FAILED"
	return []closeRaceBranch{
		{"archive first, the resume refused LOCK_CONFLICT", 0, archived, 1, "refused LOCK_CONFLICT", "FAILED/ARCHIVED", node + " 1 FAILED"},
		{"archive first, the resume refused RUN_NOT_RESUMABLE", 0, archived, 1, "refused RUN_NOT_RESUMABLE", "FAILED/ARCHIVED", node + " 1 FAILED"},
		{"resume first, the archive REJECTED LOCK_CONFLICT", 1, rejected, 1, ran, "FAILED/ACTIVE", node + " 1,2 FAILED"},
		{"the resume ran, the archive ARCHIVED", 0, archived, 1, ran, "FAILED/ARCHIVED", node + " 1,2 FAILED"},
		{"archive first, the resume's lock re-read after the release: LOCK_UNAVAILABLE", 0, archived, 1, "refused LOCK_UNAVAILABLE", "FAILED/ARCHIVED", node + " 1 FAILED"},
	}
}

// settledByTheLock waits for both processes, reads what they printed and the Run's records,
// and compares the whole observation with each allowed order's; it passes when one matches
// exactly and notes that one as the outcome branch.
func (closeRaceDomain) settledByTheLock(ctx context.Context, archiveName, resumeName, nodeName string) error {
	sc := kit.SceneOf(ctx)
	calls, err := kit.FinishedCalls(ctx, archiveName, resumeName)
	if err != nil {
		return err
	}
	ac, rc := calls[0], calls[1]
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	atts, nos, err := kit.AttemptsOfNode(ctx, nodeName)
	if err != nil {
		return err
	}
	var statuses []string
	allFailed := true
	for _, a := range atts {
		statuses = append(statuses, a.Status)
		allFailed = allFailed && a.Status == "FAILED"
	}
	attempts := nodeName + " " + kit.OrNone(nos)
	if allFailed && len(atts) > 0 {
		attempts += " FAILED"
	} else {
		attempts += " statuses " + strings.Join(statuses, ",")
	}
	field := func(k string) string { return kit.JSONField(ac.JSON, k) }
	archive := "outcome=" + field("outcome")
	if a := field("audit"); a != "(absent)" {
		archive += " audit=" + a
	}
	if c := field("code"); c != "(absent)" {
		archive += " code=" + c
	}
	archive += " lock_released=" + field("lock_released")
	seen := closeRaceBranch{archiveExit: ac.Result.ExitCode, archive: archive, resumeExit: rc.Result.ExitCode,
		resume: resumeSaid(rc, run.RunID), run: run.Status + "/" + kit.OrNone(run.LifecycleStatus), attemptsSeen: attempts}

	held, want := matchCloseRace(seen, nodeName)
	// Which of the alternatives held: `flowtest explore` counts the branches.
	sc.St.Note(schedule.BranchNote, kit.OrNone(held))
	return sc.St.On("traffic.order", "state.NETWORK_LOCK.owner_invocation_id").Assert("the archive and the resume settled in an order the Network lock allows",
		"one of: "+strings.Join(want, " | "), seen.observed(), held != "")
}

// matchCloseRace is the allowed order whose whole expectation equals seen ("" when none),
// and every order's expectation, named, for the record.
func matchCloseRace(seen closeRaceBranch, node string) (held string, want []string) {
	for _, b := range closeRaceBranches(node) {
		want = append(want, b.name+": "+b.observed())
		if b.observed() == seen.observed() {
			held = b.name
		}
	}
	return held, want
}

// resumeSaid is what a run-network --resume-run said: refused with the code of its
// `Error [<CODE>]:` line, or the RESUME summary of run runID and its aggregate.
func resumeSaid(c *kit.FlownetCall, runID string) string {
	for _, l := range strings.Split(c.Stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "Error ["); ok {
			if code, _, ok := strings.Cut(rest, "]"); ok {
				return "refused " + code
			}
		}
	}
	m := kit.ReportedLine.FindStringSubmatch(c.Stdout)
	if m == nil || m[1] == "" {
		return "no refusal and no summary: " + kit.FirstLineOrNone(c.Stdout)
	}
	of := "the run"
	if m[2] != runID {
		of = "run " + m[2]
	}
	agg := "?"
	if _, after, ok := strings.Cut(c.Stdout, " finished with aggregate "); ok {
		agg, _, _ = strings.Cut(after, " ")
	}
	return m[1] + " of " + of + ", aggregate " + agg
}
