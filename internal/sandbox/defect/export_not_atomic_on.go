//go:build defect_export_not_atomic

package defect

// ExportNotAtomic is planted: this binary was built with -tags defect_export_not_atomic (see defects.yaml).
const ExportNotAtomic = true
