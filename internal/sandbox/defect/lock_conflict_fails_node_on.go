//go:build defect_lock_conflict_fails_node

package defect

// LockConflictFailsNode is planted: this binary was built with -tags defect_lock_conflict_fails_node (see defects.yaml).
const LockConflictFailsNode = true
