//go:build defect_gaia_co02_resent

package defect

// GaiaCo02Resent is planted: this binary was built with -tags defect_gaia_co02_resent (see defects.yaml).
const GaiaCo02Resent = true
