//go:build !defect_resume_executes_working_copy

package defect

// ResumeExecutesWorkingCopy is the correct behaviour (see defects.yaml for the planted bug).
const ResumeExecutesWorkingCopy = false
