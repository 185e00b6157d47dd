//go:build defect_resume_executes_working_copy

package defect

// ResumeExecutesWorkingCopy is planted: this binary was built with -tags defect_resume_executes_working_copy (see defects.yaml).
const ResumeExecutesWorkingCopy = true
