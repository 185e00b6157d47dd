//go:build defect_stop_closes_invocation_only

package defect

// StopClosesInvocationOnly is planted: this binary was built with -tags defect_stop_closes_invocation_only (see defects.yaml).
const StopClosesInvocationOnly = true
