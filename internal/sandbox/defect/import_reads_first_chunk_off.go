//go:build !defect_import_reads_first_chunk

package defect

// ImportReadsFirstChunk is the correct behaviour (see defects.yaml for the planted bug).
const ImportReadsFirstChunk = false
