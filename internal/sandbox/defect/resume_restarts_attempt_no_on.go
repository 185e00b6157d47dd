//go:build defect_resume_restarts_attempt_no

package defect

// ResumeRestartsAttemptNo is planted: this binary was built with -tags defect_resume_restarts_attempt_no (see defects.yaml).
const ResumeRestartsAttemptNo = true
