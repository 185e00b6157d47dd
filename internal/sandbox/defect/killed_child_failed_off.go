//go:build !defect_killed_child_failed

package defect

// KilledChildFailed is the correct behaviour (see defects.yaml for the planted bug).
const KilledChildFailed = false
