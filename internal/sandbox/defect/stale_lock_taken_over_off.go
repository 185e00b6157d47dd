//go:build !defect_stale_lock_taken_over

package defect

// StaleLockTakenOver is the correct behaviour (see defects.yaml for the planted bug).
const StaleLockTakenOver = false
