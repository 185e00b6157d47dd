//go:build !defect_close_clears_late_hold

package defect

// CloseClearsLateHold is the correct behaviour (see defects.yaml for the planted bug).
const CloseClearsLateHold = false
