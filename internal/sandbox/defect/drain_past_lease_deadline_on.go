//go:build defect_drain_past_lease_deadline

package defect

// DrainPastLeaseDeadline is planted: this binary was built with -tags defect_drain_past_lease_deadline (see defects.yaml).
const DrainPastLeaseDeadline = true
