//go:build defect_result_started_at_is_as_of

package defect

// ResultStartedAtIsAsOf is planted: this binary was built with -tags defect_result_started_at_is_as_of (see defects.yaml).
const ResultStartedAtIsAsOf = true
