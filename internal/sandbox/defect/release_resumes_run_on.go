//go:build defect_release_resumes_run

package defect

// ReleaseResumesRun is planted: this binary was built with -tags defect_release_resumes_run (see defects.yaml).
const ReleaseResumesRun = true
