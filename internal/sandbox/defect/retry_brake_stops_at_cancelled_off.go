//go:build !defect_retry_brake_stops_at_cancelled

package defect

// RetryBrakeStopsAtCancelled is the correct behaviour (see defects.yaml for the planted bug).
const RetryBrakeStopsAtCancelled = false
