//go:build !defect_rerun_from_node_dropped

package defect

// RerunFromNodeDropped is the correct behaviour (see defects.yaml for the planted bug).
const RerunFromNodeDropped = false
