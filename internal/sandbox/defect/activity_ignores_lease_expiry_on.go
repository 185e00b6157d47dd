//go:build defect_activity_ignores_lease_expiry

package defect

// ActivityIgnoresLeaseExpiry is planted: this binary was built with -tags defect_activity_ignores_lease_expiry (see defects.yaml).
const ActivityIgnoresLeaseExpiry = true
