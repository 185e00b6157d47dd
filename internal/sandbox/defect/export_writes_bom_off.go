//go:build !defect_export_writes_bom

package defect

// ExportWritesBom is the correct behaviour (see defects.yaml for the planted bug).
const ExportWritesBom = false
