//go:build defect_job_log_wrong_correlation

package defect

// JobLogWrongCorrelation is planted: this binary was built with -tags defect_job_log_wrong_correlation (see defects.yaml).
const JobLogWrongCorrelation = true
