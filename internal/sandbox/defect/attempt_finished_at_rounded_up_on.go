//go:build defect_attempt_finished_at_rounded_up

package defect

// AttemptFinishedAtRoundedUp is planted: this binary was built with -tags defect_attempt_finished_at_rounded_up (see defects.yaml).
const AttemptFinishedAtRoundedUp = true
