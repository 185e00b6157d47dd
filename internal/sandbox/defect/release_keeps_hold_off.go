//go:build !defect_release_keeps_hold

package defect

// ReleaseKeepsHold is the correct behaviour (see defects.yaml for the planted bug).
const ReleaseKeepsHold = false
