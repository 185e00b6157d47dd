//go:build defect_force_unlock_accepts_live_lease

package defect

// ForceUnlockAcceptsLiveLease is planted: this binary was built with -tags defect_force_unlock_accepts_live_lease (see defects.yaml).
const ForceUnlockAcceptsLiveLease = true
