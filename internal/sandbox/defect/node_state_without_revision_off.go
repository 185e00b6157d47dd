//go:build !defect_node_state_without_revision

package defect

// NodeStateWithoutRevision is the correct behaviour (see defects.yaml for the planted bug).
const NodeStateWithoutRevision = false
