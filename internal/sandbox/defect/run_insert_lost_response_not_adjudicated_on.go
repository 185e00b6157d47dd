//go:build defect_run_insert_lost_response_not_adjudicated

package defect

// RunInsertLostResponseNotAdjudicated is planted: this binary was built with -tags defect_run_insert_lost_response_not_adjudicated (see defects.yaml).
const RunInsertLostResponseNotAdjudicated = true
