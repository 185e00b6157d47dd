//go:build defect_run_json_outcome_from_flag

package defect

// RunJsonOutcomeFromFlag is planted: this binary was built with -tags defect_run_json_outcome_from_flag (see defects.yaml).
const RunJsonOutcomeFromFlag = true
