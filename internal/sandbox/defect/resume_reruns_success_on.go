//go:build defect_resume_reruns_success

package defect

// ResumeRerunsSuccess is planted: this binary was built with -tags defect_resume_reruns_success (see defects.yaml).
const ResumeRerunsSuccess = true
