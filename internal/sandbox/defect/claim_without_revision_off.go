//go:build !defect_claim_without_revision

package defect

// ClaimWithoutRevision is the correct behaviour (see defects.yaml for the planted bug).
const ClaimWithoutRevision = false
