//go:build defect_retry_brake_ignores_result_code

package defect

// RetryBrakeIgnoresResultCode is planted: this binary was built with -tags defect_retry_brake_ignores_result_code (see defects.yaml).
const RetryBrakeIgnoresResultCode = true
