//go:build defect_deferral_without_nodes_deferred

package defect

// DeferralWithoutNodesDeferred is planted: this binary was built with -tags defect_deferral_without_nodes_deferred (see defects.yaml).
const DeferralWithoutNodesDeferred = true
