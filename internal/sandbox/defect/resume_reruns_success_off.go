//go:build !defect_resume_reruns_success

package defect

// ResumeRerunsSuccess is the correct behaviour (see defects.yaml for the planted bug).
const ResumeRerunsSuccess = false
