//go:build !defect_lock_conflict_fails_node

package defect

// LockConflictFailsNode is the correct behaviour (see defects.yaml for the planted bug).
const LockConflictFailsNode = false
