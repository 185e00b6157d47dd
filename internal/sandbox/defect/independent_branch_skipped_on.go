//go:build defect_independent_branch_skipped

package defect

// IndependentBranchSkipped is planted: this binary was built with -tags defect_independent_branch_skipped (see defects.yaml).
const IndependentBranchSkipped = true
