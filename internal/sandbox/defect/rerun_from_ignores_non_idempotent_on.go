//go:build defect_rerun_from_ignores_non_idempotent

package defect

// RerunFromIgnoresNonIdempotent is planted: this binary was built with -tags defect_rerun_from_ignores_non_idempotent (see defects.yaml).
const RerunFromIgnoresNonIdempotent = true
