//go:build defect_force_unlock_misses_dead_holder

package defect

// ForceUnlockMissesDeadHolder is planted: this binary was built with -tags defect_force_unlock_misses_dead_holder (see defects.yaml).
const ForceUnlockMissesDeadHolder = true
