//go:build !defect_job_log_wrong_execution_id

package defect

// JobLogWrongExecutionId is the correct behaviour (see defects.yaml for the planted bug).
const JobLogWrongExecutionId = false
