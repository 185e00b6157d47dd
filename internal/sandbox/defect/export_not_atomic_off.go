//go:build !defect_export_not_atomic

package defect

// ExportNotAtomic is the correct behaviour (see defects.yaml for the planted bug).
const ExportNotAtomic = false
