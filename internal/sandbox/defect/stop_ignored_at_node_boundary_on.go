//go:build defect_stop_ignored_at_node_boundary

package defect

// StopIgnoredAtNodeBoundary is planted: this binary was built with -tags defect_stop_ignored_at_node_boundary (see defects.yaml).
const StopIgnoredAtNodeBoundary = true
