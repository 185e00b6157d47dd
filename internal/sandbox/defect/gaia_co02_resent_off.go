//go:build !defect_gaia_co02_resent

package defect

// GaiaCo02Resent is the correct behaviour (see defects.yaml for the planted bug).
const GaiaCo02Resent = false
