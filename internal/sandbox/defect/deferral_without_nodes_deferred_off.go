//go:build !defect_deferral_without_nodes_deferred

package defect

// DeferralWithoutNodesDeferred is the correct behaviour (see defects.yaml for the planted bug).
const DeferralWithoutNodesDeferred = false
