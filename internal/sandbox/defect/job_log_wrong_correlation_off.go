//go:build !defect_job_log_wrong_correlation

package defect

// JobLogWrongCorrelation is the correct behaviour (see defects.yaml for the planted bug).
const JobLogWrongCorrelation = false
