//go:build defect_approver_check_missing

package defect

// ApproverCheckMissing is planted: this binary was built with -tags defect_approver_check_missing (see defects.yaml).
const ApproverCheckMissing = true
