//go:build defect_force_unlock_refusal_audited

package defect

// ForceUnlockRefusalAudited is planted: this binary was built with -tags defect_force_unlock_refusal_audited (see defects.yaml).
const ForceUnlockRefusalAudited = true
