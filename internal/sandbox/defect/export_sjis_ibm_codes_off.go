//go:build !defect_export_sjis_ibm_codes

package defect

// ExportSjisIbmCodes is the correct behaviour (see defects.yaml for the planted bug).
const ExportSjisIbmCodes = false
