//go:build defect_close_lock_unreleased_settled_archived

package defect

// CloseLockUnreleasedSettledArchived is planted: this binary was built with -tags defect_close_lock_unreleased_settled_archived (see defects.yaml).
const CloseLockUnreleasedSettledArchived = true
