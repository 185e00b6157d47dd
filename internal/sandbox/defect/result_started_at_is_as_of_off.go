//go:build !defect_result_started_at_is_as_of

package defect

// ResultStartedAtIsAsOf is the correct behaviour (see defects.yaml for the planted bug).
const ResultStartedAtIsAsOf = false
