//go:build !defect_kintone_accepts_duplicate_unique

package defect

// KintoneAcceptsDuplicateUnique is the correct behaviour (see defects.yaml for the planted bug).
const KintoneAcceptsDuplicateUnique = false
