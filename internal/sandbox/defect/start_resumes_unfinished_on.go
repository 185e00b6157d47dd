//go:build defect_start_resumes_unfinished

package defect

// StartResumesUnfinished is planted: this binary was built with -tags defect_start_resumes_unfinished (see defects.yaml).
const StartResumesUnfinished = true
