//go:build !defect_claim_conflict_adopted_by_host

package defect

// ClaimConflictAdoptedByHost is the correct behaviour (see defects.yaml for the planted bug).
const ClaimConflictAdoptedByHost = false
