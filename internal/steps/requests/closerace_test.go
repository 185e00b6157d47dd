package requests

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// Each order the Network lock allows is recognised whole, and an observation that mixes two
// of them, or that no order leaves, is none: every part of the comparison can fail.
func TestCloseRaceBranches(t *testing.T) {
	for _, b := range closeRaceBranches("n1") {
		held, want := matchCloseRace(b, "n1")
		assert.Equal(t, b.name, held)
		assert.Len(t, want, len(closeRaceBranches("n1")))
	}
	ran := closeRaceBranches("n1")[3] // the resume ran, the archive ARCHIVED
	for what, change := range map[string]func(*closeRaceBranch){
		"the Run left ACTIVE after ARCHIVED":        func(b *closeRaceBranch) { b.run = "FAILED/ACTIVE" },
		"no second attempt although the resume ran": func(b *closeRaceBranch) { b.attemptsSeen = "n1 1 FAILED" },
		"the archive's audit pending": func(b *closeRaceBranch) {
			b.archive = "outcome=ARCHIVED audit=PENDING code=ARCHIVE_AUDIT_FAILED lock_released=true"
		},
		"the archive's lock not released":  func(b *closeRaceBranch) { b.archive = "outcome=ARCHIVED audit=RECORDED lock_released=false" },
		"the archive exit 1 with ARCHIVED": func(b *closeRaceBranch) { b.archiveExit = 1 },
		"the resume exit 0":                func(b *closeRaceBranch) { b.resumeExit = 0 },
		"the resume refused another code":  func(b *closeRaceBranch) { b.resume = "refused RUN_ON_HOLD" },
		"the resume of another run":        func(b *closeRaceBranch) { b.resume = "RESUME of run netrun_x, aggregate FAILED" },
		"an attempt not FAILED":            func(b *closeRaceBranch) { b.attemptsSeen = "n1 1,2 statuses FAILED,SUCCESS" },
	} {
		b := ran
		change(&b)
		held, _ := matchCloseRace(b, "n1")
		assert.Empty(t, held, what)
	}
}

func TestResumeSaid(t *testing.T) {
	refused := &kit.FlownetCall{Stderr: "Error [RUN_NOT_RESUMABLE]: Run netrun_1 is not resumable (lifecycle_status=ARCHIVED, resume_allowed=true)\n"}
	assert.Equal(t, "refused RUN_NOT_RESUMABLE", resumeSaid(refused, "netrun_1"))
	ran := &kit.FlownetCall{Stdout: "RESUME: Run netrun_1 finished with aggregate FAILED (ASSERT_FAILED).\n", Stderr: "lease heartbeat ok\n"}
	assert.Equal(t, "RESUME of the run, aggregate FAILED", resumeSaid(ran, "netrun_1"))
	assert.Equal(t, "RESUME of run netrun_1, aggregate FAILED", resumeSaid(ran, "netrun_2"))
	assert.Contains(t, resumeSaid(&kit.FlownetCall{Stdout: "something else\n"}, "netrun_1"), "no refusal and no summary")
}
