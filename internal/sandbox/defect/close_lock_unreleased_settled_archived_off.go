//go:build !defect_close_lock_unreleased_settled_archived

package defect

// CloseLockUnreleasedSettledArchived is the correct behaviour (see defects.yaml for the planted bug).
const CloseLockUnreleasedSettledArchived = false
