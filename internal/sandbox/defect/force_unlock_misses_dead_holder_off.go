//go:build !defect_force_unlock_misses_dead_holder

package defect

// ForceUnlockMissesDeadHolder is the correct behaviour (see defects.yaml for the planted bug).
const ForceUnlockMissesDeadHolder = false
