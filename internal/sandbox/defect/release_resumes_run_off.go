//go:build !defect_release_resumes_run

package defect

// ReleaseResumesRun is the correct behaviour (see defects.yaml for the planted bug).
const ReleaseResumesRun = false
