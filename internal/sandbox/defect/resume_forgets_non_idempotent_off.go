//go:build !defect_resume_forgets_non_idempotent

package defect

// ResumeForgetsNonIdempotent is the correct behaviour (see defects.yaml for the planted bug).
const ResumeForgetsNonIdempotent = false
