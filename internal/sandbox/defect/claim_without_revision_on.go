//go:build defect_claim_without_revision

package defect

// ClaimWithoutRevision is planted: this binary was built with -tags defect_claim_without_revision (see defects.yaml).
const ClaimWithoutRevision = true
