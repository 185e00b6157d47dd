//go:build !defect_stop_ignored_at_node_boundary

package defect

// StopIgnoredAtNodeBoundary is the correct behaviour (see defects.yaml for the planted bug).
const StopIgnoredAtNodeBoundary = false
