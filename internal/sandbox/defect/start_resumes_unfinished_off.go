//go:build !defect_start_resumes_unfinished

package defect

// StartResumesUnfinished is the correct behaviour (see defects.yaml for the planted bug).
const StartResumesUnfinished = false
