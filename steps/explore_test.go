package steps

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBranchOfNamesTheOutcomeWithoutTheRequests(t *testing.T) {
	a := branchOf([]string{"first: DONE/OK", "second: REJECTED/LOCK_CONFLICT"})
	b := branchOf([]string{"first: REJECTED/LOCK_CONFLICT", "second: DONE/OK"})
	assert.Equal(t, []string{"DONE/OK", "REJECTED/LOCK_CONFLICT"}, a)
	assert.Equal(t, a, b, "which request won is not part of the branch")
}
