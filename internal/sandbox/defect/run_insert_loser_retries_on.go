//go:build defect_run_insert_loser_retries

package defect

// RunInsertLoserRetries is planted: this binary was built with -tags defect_run_insert_loser_retries (see defects.yaml).
const RunInsertLoserRetries = true
