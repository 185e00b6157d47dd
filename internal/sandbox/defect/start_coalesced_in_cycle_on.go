//go:build defect_start_coalesced_in_cycle

package defect

// StartCoalescedInCycle is planted: this binary was built with -tags defect_start_coalesced_in_cycle (see defects.yaml).
const StartCoalescedInCycle = true
