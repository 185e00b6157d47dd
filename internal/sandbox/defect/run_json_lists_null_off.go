//go:build !defect_run_json_lists_null

package defect

// RunJsonListsNull is the correct behaviour (see defects.yaml for the planted bug).
const RunJsonListsNull = false
