//go:build defect_resume_forgets_non_idempotent

package defect

// ResumeForgetsNonIdempotent is planted: this binary was built with -tags defect_resume_forgets_non_idempotent (see defects.yaml).
const ResumeForgetsNonIdempotent = true
