//go:build !defect_run_json_aggregate_stale

package defect

// RunJsonAggregateStale is the correct behaviour (see defects.yaml for the planted bug).
const RunJsonAggregateStale = false
