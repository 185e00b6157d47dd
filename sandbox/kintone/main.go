package kintone

import "io"

// Main is the entry point of "flowsandbox kintone …"; placeholder until the package lands.
func Main(args []string, stdout, stderr io.Writer) int {
	io.WriteString(stderr, "flowsandbox: kintone is not built yet\n")
	return 2
}
