//go:build !defect_resume_prints_new

package defect

// ResumePrintsNew is the correct behaviour (see defects.yaml for the planted bug).
const ResumePrintsNew = false
