//go:build defect_release_keeps_hold

package defect

// ReleaseKeepsHold is planted: this binary was built with -tags defect_release_keeps_hold (see defects.yaml).
const ReleaseKeepsHold = true
