//go:build !defect_independent_branch_skipped

package defect

// IndependentBranchSkipped is the correct behaviour (see defects.yaml for the planted bug).
const IndependentBranchSkipped = false
