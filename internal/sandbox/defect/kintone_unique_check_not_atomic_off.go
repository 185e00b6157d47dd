//go:build !defect_kintone_unique_check_not_atomic

package defect

// KintoneUniqueCheckNotAtomic is the correct behaviour (see defects.yaml for the planted bug).
const KintoneUniqueCheckNotAtomic = false
