//go:build defect_export_sjis_ibm_codes

package defect

// ExportSjisIbmCodes is planted: this binary was built with -tags defect_export_sjis_ibm_codes (see defects.yaml).
const ExportSjisIbmCodes = true
