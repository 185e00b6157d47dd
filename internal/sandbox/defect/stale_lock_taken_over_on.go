//go:build defect_stale_lock_taken_over

package defect

// StaleLockTakenOver is planted: this binary was built with -tags defect_stale_lock_taken_over (see defects.yaml).
const StaleLockTakenOver = true
