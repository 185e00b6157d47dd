//go:build !defect_resume_skips_input_digest

package defect

// ResumeSkipsInputDigest is the correct behaviour (see defects.yaml for the planted bug).
const ResumeSkipsInputDigest = false
