//go:build defect_deferral_marks_run_failed

package defect

// DeferralMarksRunFailed is planted: this binary was built with -tags defect_deferral_marks_run_failed (see defects.yaml).
const DeferralMarksRunFailed = true
