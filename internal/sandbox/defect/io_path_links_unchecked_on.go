//go:build defect_io_path_links_unchecked

package defect

// IoPathLinksUnchecked is planted: this binary was built with -tags defect_io_path_links_unchecked (see defects.yaml).
const IoPathLinksUnchecked = true
