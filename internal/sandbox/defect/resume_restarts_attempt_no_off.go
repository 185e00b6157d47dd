//go:build !defect_resume_restarts_attempt_no

package defect

// ResumeRestartsAttemptNo is the correct behaviour (see defects.yaml for the planted bug).
const ResumeRestartsAttemptNo = false
