//go:build !defect_output_audit_names_path

package defect

// OutputAuditNamesPath is the correct behaviour (see defects.yaml for the planted bug).
const OutputAuditNamesPath = false
