package results

import "testing"

// The helpers the external tests (package results_test, which may import the packages that
// import results: evidence, pack) share with the internal ones.
var (
	LoadJSON        = loadJSON
	CoverType       = coverType
	TestRedactor    = testRedactor
	SampleScenario  = sampleScenario
	FinishedArchive = finishedArchive
)

// BrokenArchive is one of brokenArchives for an external test: its name, how to break a
// finished archive, the first problem that must be named.
type BrokenArchive struct {
	Name  string
	Break func(t *testing.T, dir string)
	Want  string
}

func BrokenArchives() []BrokenArchive {
	var out []BrokenArchive
	for _, c := range brokenArchives() {
		out = append(out, BrokenArchive{Name: c.name, Break: c.breakIt, Want: c.want[0]})
	}
	return out
}
