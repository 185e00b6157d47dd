//go:build defect_run_json_invocation_id_null

package defect

// RunJsonInvocationIdNull is planted: this binary was built with -tags defect_run_json_invocation_id_null (see defects.yaml).
const RunJsonInvocationIdNull = true
