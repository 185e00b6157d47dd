package ksqlwrap

import (
	"os"
	"testing"

	"github.com/ksqlflow/flowtest/internal/app/buildtest"
)

// binDir holds the flowtest binary, built once for the tests that run the wrapper as the
// process FlowNet starts (exec keeps the pid; a relayed child's signal becomes the
// wrapper's): only a real process can show that, not a call in this test binary.
var binDir string

func TestMain(m *testing.M) { os.Exit(buildtest.RunWith(m.Run, &binDir, "flowtest")) }
