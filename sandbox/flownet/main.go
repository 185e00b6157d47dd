package flownet

import "io"

// Main is the entry point of "flowsandbox flownet …"; placeholder until the package lands.
func Main(args []string, stdout, stderr io.Writer) int {
	io.WriteString(stderr, "flowsandbox: flownet is not built yet\n")
	return 2
}
