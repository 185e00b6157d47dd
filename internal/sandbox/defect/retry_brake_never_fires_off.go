//go:build !defect_retry_brake_never_fires

package defect

// RetryBrakeNeverFires is the correct behaviour (see defects.yaml for the planted bug).
const RetryBrakeNeverFires = false
