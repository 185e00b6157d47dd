//go:build defect_export_writes_bom

package defect

// ExportWritesBom is planted: this binary was built with -tags defect_export_writes_bom (see defects.yaml).
const ExportWritesBom = true
