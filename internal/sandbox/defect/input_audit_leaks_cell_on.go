//go:build defect_input_audit_leaks_cell

package defect

// InputAuditLeaksCell is planted: this binary was built with -tags defect_input_audit_leaks_cell (see defects.yaml).
const InputAuditLeaksCell = true
