//go:build defect_killed_child_failed

package defect

// KilledChildFailed is planted: this binary was built with -tags defect_killed_child_failed (see defects.yaml).
const KilledChildFailed = true
