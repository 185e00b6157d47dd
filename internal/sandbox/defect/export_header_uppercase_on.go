//go:build defect_export_header_uppercase

package defect

// ExportHeaderUppercase is planted: this binary was built with -tags defect_export_header_uppercase (see defects.yaml).
const ExportHeaderUppercase = true
