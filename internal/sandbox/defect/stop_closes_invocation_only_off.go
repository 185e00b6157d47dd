//go:build !defect_stop_closes_invocation_only

package defect

// StopClosesInvocationOnly is the correct behaviour (see defects.yaml for the planted bug).
const StopClosesInvocationOnly = false
