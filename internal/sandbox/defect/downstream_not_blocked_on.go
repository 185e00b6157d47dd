//go:build defect_downstream_not_blocked

package defect

// DownstreamNotBlocked is planted: this binary was built with -tags defect_downstream_not_blocked (see defects.yaml).
const DownstreamNotBlocked = true
