//go:build !defect_activity_ignores_lease_expiry

package defect

// ActivityIgnoresLeaseExpiry is the correct behaviour (see defects.yaml for the planted bug).
const ActivityIgnoresLeaseExpiry = false
