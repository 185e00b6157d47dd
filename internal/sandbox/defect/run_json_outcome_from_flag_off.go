//go:build !defect_run_json_outcome_from_flag

package defect

// RunJsonOutcomeFromFlag is the correct behaviour (see defects.yaml for the planted bug).
const RunJsonOutcomeFromFlag = false
