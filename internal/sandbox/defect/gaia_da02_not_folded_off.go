//go:build !defect_gaia_da02_not_folded

package defect

// GaiaDa02NotFolded is the correct behaviour (see defects.yaml for the planted bug).
const GaiaDa02NotFolded = false
