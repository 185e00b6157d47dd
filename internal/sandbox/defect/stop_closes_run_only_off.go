//go:build !defect_stop_closes_run_only

package defect

// StopClosesRunOnly is the correct behaviour (see defects.yaml for the planted bug).
const StopClosesRunOnly = false
