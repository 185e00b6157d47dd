//go:build !defect_run_insert_loser_retries

package defect

// RunInsertLoserRetries is the correct behaviour (see defects.yaml for the planted bug).
const RunInsertLoserRetries = false
