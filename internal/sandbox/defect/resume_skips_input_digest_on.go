//go:build defect_resume_skips_input_digest

package defect

// ResumeSkipsInputDigest is planted: this binary was built with -tags defect_resume_skips_input_digest (see defects.yaml).
const ResumeSkipsInputDigest = true
