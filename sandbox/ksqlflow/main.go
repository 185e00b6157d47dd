package ksqlflow

import "io"

// Main is the entry point of "flowsandbox ksqlflow …"; placeholder until the package lands.
func Main(args []string, stdout, stderr io.Writer) int {
	io.WriteString(stderr, "flowsandbox: ksqlflow is not built yet\n")
	return 2
}
