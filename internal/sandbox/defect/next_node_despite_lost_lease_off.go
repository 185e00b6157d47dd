//go:build !defect_next_node_despite_lost_lease

package defect

// NextNodeDespiteLostLease is the correct behaviour (see defects.yaml for the planted bug).
const NextNodeDespiteLostLease = false
