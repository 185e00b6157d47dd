//go:build !defect_export_header_uppercase

package defect

// ExportHeaderUppercase is the correct behaviour (see defects.yaml for the planted bug).
const ExportHeaderUppercase = false
