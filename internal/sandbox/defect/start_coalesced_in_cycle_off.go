//go:build !defect_start_coalesced_in_cycle

package defect

// StartCoalescedInCycle is the correct behaviour (see defects.yaml for the planted bug).
const StartCoalescedInCycle = false
