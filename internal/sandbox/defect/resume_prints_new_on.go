//go:build defect_resume_prints_new

package defect

// ResumePrintsNew is planted: this binary was built with -tags defect_resume_prints_new (see defects.yaml).
const ResumePrintsNew = true
