//go:build !defect_hold_polled_during_node

package defect

// HoldPolledDuringNode is the correct behaviour (see defects.yaml for the planted bug).
const HoldPolledDuringNode = false
