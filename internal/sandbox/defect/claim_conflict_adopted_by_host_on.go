//go:build defect_claim_conflict_adopted_by_host

package defect

// ClaimConflictAdoptedByHost is planted: this binary was built with -tags defect_claim_conflict_adopted_by_host (see defects.yaml).
const ClaimConflictAdoptedByHost = true
