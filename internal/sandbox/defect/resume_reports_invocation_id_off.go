//go:build !defect_resume_reports_invocation_id

package defect

// ResumeReportsInvocationId is the correct behaviour (see defects.yaml for the planted bug).
const ResumeReportsInvocationId = false
