//go:build defect_hold_polled_during_node

package defect

// HoldPolledDuringNode is planted: this binary was built with -tags defect_hold_polled_during_node (see defects.yaml).
const HoldPolledDuringNode = true
