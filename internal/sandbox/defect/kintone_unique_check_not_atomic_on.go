//go:build defect_kintone_unique_check_not_atomic

package defect

// KintoneUniqueCheckNotAtomic is planted: this binary was built with -tags defect_kintone_unique_check_not_atomic (see defects.yaml).
const KintoneUniqueCheckNotAtomic = true
