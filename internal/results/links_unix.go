//go:build unix

package results

import (
	"io/fs"
	"syscall"
)

// linkCount is how many names a regular file has. A file of an archive that has another name
// may be one outside the archive (a hard link made by hand): what verify passes must be what
// a pack of the folder seals, so such a member is refused like a symbolic link. flowtest
// itself never links the files it writes.
func linkCount(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
