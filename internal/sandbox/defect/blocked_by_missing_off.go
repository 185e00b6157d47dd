//go:build !defect_blocked_by_missing

package defect

// BlockedByMissing is the correct behaviour (see defects.yaml for the planted bug).
const BlockedByMissing = false
