//go:build !defect_force_unlock_refusal_audited

package defect

// ForceUnlockRefusalAudited is the correct behaviour (see defects.yaml for the planted bug).
const ForceUnlockRefusalAudited = false
