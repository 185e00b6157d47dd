//go:build defect_blocked_by_missing

package defect

// BlockedByMissing is planted: this binary was built with -tags defect_blocked_by_missing (see defects.yaml).
const BlockedByMissing = true
