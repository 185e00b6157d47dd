//go:build defect_job_log_wrong_execution_id

package defect

// JobLogWrongExecutionId is planted: this binary was built with -tags defect_job_log_wrong_execution_id (see defects.yaml).
const JobLogWrongExecutionId = true
