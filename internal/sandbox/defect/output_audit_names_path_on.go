//go:build defect_output_audit_names_path

package defect

// OutputAuditNamesPath is planted: this binary was built with -tags defect_output_audit_names_path (see defects.yaml).
const OutputAuditNamesPath = true
