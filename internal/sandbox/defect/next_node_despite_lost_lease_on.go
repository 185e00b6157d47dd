//go:build defect_next_node_despite_lost_lease

package defect

// NextNodeDespiteLostLease is planted: this binary was built with -tags defect_next_node_despite_lost_lease (see defects.yaml).
const NextNodeDespiteLostLease = true
