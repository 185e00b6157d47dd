//go:build !defect_rerun_from_ignores_non_idempotent

package defect

// RerunFromIgnoresNonIdempotent is the correct behaviour (see defects.yaml for the planted bug).
const RerunFromIgnoresNonIdempotent = false
