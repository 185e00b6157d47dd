//go:build defect_new_run_reports_invocation_id

package defect

// NewRunReportsInvocationId is planted: this binary was built with -tags defect_new_run_reports_invocation_id (see defects.yaml).
const NewRunReportsInvocationId = true
