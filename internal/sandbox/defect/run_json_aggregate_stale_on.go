//go:build defect_run_json_aggregate_stale

package defect

// RunJsonAggregateStale is planted: this binary was built with -tags defect_run_json_aggregate_stale (see defects.yaml).
const RunJsonAggregateStale = true
