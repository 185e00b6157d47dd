//go:build defect_close_clears_late_hold

package defect

// CloseClearsLateHold is planted: this binary was built with -tags defect_close_clears_late_hold (see defects.yaml).
const CloseClearsLateHold = true
