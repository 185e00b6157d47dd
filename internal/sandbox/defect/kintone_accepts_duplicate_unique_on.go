//go:build defect_kintone_accepts_duplicate_unique

package defect

// KintoneAcceptsDuplicateUnique is planted: this binary was built with -tags defect_kintone_accepts_duplicate_unique (see defects.yaml).
const KintoneAcceptsDuplicateUnique = true
