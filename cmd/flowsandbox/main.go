// Command flowsandbox is the one binary behind every sandbox process flowtest starts:
// the kintone REST emulator, the reference kSQL-Flow and the reference kSQL-FlowNet CLI
// and poller. One binary keeps the planted-defect builds to a single artefact.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
	"github.com/ksqlflow/flowtest/internal/sandbox/flownet"
	"github.com/ksqlflow/flowtest/internal/sandbox/ksqlflow"
)

var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"kintone":   emulator.Main,
	"ksql-flow": ksqlflow.Main,
	"flownet":   flownet.Main,
}

const usage = `usage: flowsandbox <kintone|ksql-flow|flownet> <command> [flags]

  flowsandbox kintone serve …      kintone REST emulator (HTTPS on 127.0.0.1)
  flowsandbox ksql-flow <cmd> …    reference kSQL-Flow (ksql-flow.execution/v1)
  flowsandbox flownet <cmd> …      reference kSQL-FlowNet CLI and poller
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "flowsandbox: unknown component %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	os.Exit(run(os.Args[2:], os.Stdout, os.Stderr))
}
