//go:build defect_retry_brake_stops_at_cancelled

package defect

// RetryBrakeStopsAtCancelled is planted: this binary was built with -tags defect_retry_brake_stops_at_cancelled (see defects.yaml).
const RetryBrakeStopsAtCancelled = true
