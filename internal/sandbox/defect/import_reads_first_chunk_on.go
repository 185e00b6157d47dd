//go:build defect_import_reads_first_chunk

package defect

// ImportReadsFirstChunk is planted: this binary was built with -tags defect_import_reads_first_chunk (see defects.yaml).
const ImportReadsFirstChunk = true
