//go:build defect_node_state_without_revision

package defect

// NodeStateWithoutRevision is planted: this binary was built with -tags defect_node_state_without_revision (see defects.yaml).
const NodeStateWithoutRevision = true
