//go:build !defect_run_insert_lost_response_not_adjudicated

package defect

// RunInsertLostResponseNotAdjudicated is the correct behaviour (see defects.yaml for the planted bug).
const RunInsertLostResponseNotAdjudicated = false
