//go:build defect_kintone_ignores_stale_revision

package defect

// KintoneIgnoresStaleRevision is planted: this binary was built with -tags defect_kintone_ignores_stale_revision (see defects.yaml).
const KintoneIgnoresStaleRevision = true
