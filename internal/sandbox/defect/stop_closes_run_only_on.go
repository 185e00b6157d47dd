//go:build defect_stop_closes_run_only

package defect

// StopClosesRunOnly is planted: this binary was built with -tags defect_stop_closes_run_only (see defects.yaml).
const StopClosesRunOnly = true
