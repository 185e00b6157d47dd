//go:build defect_run_json_lists_null

package defect

// RunJsonListsNull is planted: this binary was built with -tags defect_run_json_lists_null (see defects.yaml).
const RunJsonListsNull = true
