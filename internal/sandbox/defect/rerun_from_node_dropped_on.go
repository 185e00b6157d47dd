//go:build defect_rerun_from_node_dropped

package defect

// RerunFromNodeDropped is planted: this binary was built with -tags defect_rerun_from_node_dropped (see defects.yaml).
const RerunFromNodeDropped = true
