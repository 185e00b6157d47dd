package results

// WriteFileAtomic writes data to dst whole or not at all: into a temporary file beside it
// (TempPrefix, which readers skip), synced, then renamed over dst. A command interrupted or
// failing mid-write leaves dst as it was, never half a file.
func WriteFileAtomic(dst string, data []byte) error { return writeAtomic(dst, data) }
