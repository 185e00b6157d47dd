//go:build defect_retry_brake_never_fires

package defect

// RetryBrakeNeverFires is planted: this binary was built with -tags defect_retry_brake_never_fires (see defects.yaml).
const RetryBrakeNeverFires = true
