//go:build !defect_attempt_finished_at_rounded_up

package defect

// AttemptFinishedAtRoundedUp is the correct behaviour (see defects.yaml for the planted bug).
const AttemptFinishedAtRoundedUp = false
