//go:build !defect_io_path_links_unchecked

package defect

// IoPathLinksUnchecked is the correct behaviour (see defects.yaml for the planted bug).
const IoPathLinksUnchecked = false
