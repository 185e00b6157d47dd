//go:build defect_resume_reports_invocation_id

package defect

// ResumeReportsInvocationId is planted: this binary was built with -tags defect_resume_reports_invocation_id (see defects.yaml).
const ResumeReportsInvocationId = true
