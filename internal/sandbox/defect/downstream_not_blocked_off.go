//go:build !defect_downstream_not_blocked

package defect

// DownstreamNotBlocked is the correct behaviour (see defects.yaml for the planted bug).
const DownstreamNotBlocked = false
