package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarizeOutputKeepsCodesOnly(t *testing.T) {
	out := "Error [RUN_NOT_RESUMABLE]: Run netrun_1 is not resumable (reason: secret text)\n" +
		"Warning [CANCEL_FINALIZE_CONFLICT]: request 7: kintone: GAIA_CO02 conflict on the reason body\n" +
		"poll-requests: requested=1 claimed=0 completed=0 cancelled=1 invalid=0 stale=0 skipped=0\n" +
		`{"outcome":"REJECTED","run_id":"netrun_1","event_id":"archive_x","code":"LOCK_CONFLICT","lock_released":true}` + "\n" +
		"panic: runtime error: the reason body\n" +
		"goroutine 1 [running]:\n" +
		"some body line naming a reason\n"
	want := "Error [RUN_NOT_RESUMABLE]\n" +
		"Warning [CANCEL_FINALIZE_CONFLICT] GAIA_CO02\n" +
		"poll-requests: requested=1 claimed=0 completed=0 cancelled=1 invalid=0 stale=0 skipped=0\n" +
		`{"outcome":"REJECTED","code":"LOCK_CONFLICT","lock_released":true}` + "\n" +
		"panic: (body not recorded)\n" +
		"goroutine 1 [(body not recorded)"
	assert.Equal(t, want, SummarizeOutput(out))
	assert.Equal(t, "", SummarizeOutput("NEW: Run netrun_1 finished with aggregate FAILED.\n"))
}
