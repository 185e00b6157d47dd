//go:build defect_gaia_da02_not_folded

package defect

// GaiaDa02NotFolded is planted: this binary was built with -tags defect_gaia_da02_not_folded (see defects.yaml).
const GaiaDa02NotFolded = true
