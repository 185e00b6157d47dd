//go:build !defect_new_run_reports_invocation_id

package defect

// NewRunReportsInvocationId is the correct behaviour (see defects.yaml for the planted bug).
const NewRunReportsInvocationId = false
