//go:build !defect_drain_past_lease_deadline

package defect

// DrainPastLeaseDeadline is the correct behaviour (see defects.yaml for the planted bug).
const DrainPastLeaseDeadline = false
