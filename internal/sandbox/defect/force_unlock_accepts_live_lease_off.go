//go:build !defect_force_unlock_accepts_live_lease

package defect

// ForceUnlockAcceptsLiveLease is the correct behaviour (see defects.yaml for the planted bug).
const ForceUnlockAcceptsLiveLease = false
