//go:build !defect_run_json_invocation_id_null

package defect

// RunJsonInvocationIdNull is the correct behaviour (see defects.yaml for the planted bug).
const RunJsonInvocationIdNull = false
