//go:build !defect_retry_brake_ignores_result_code

package defect

// RetryBrakeIgnoresResultCode is the correct behaviour (see defects.yaml for the planted bug).
const RetryBrakeIgnoresResultCode = false
