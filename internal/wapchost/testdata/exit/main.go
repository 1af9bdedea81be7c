// Command exit is a waPC test guest whose main ends with an explicit os.Exit(code); the tests
// build it with -ldflags=-X main.code=N to check how the host treats each exit code.
package main

import (
	"os"
	"strconv"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

var code = "0"

func main() {
	wapc.RegisterFunction("echo", func(p []byte) ([]byte, error) { return p, nil })
	n, _ := strconv.Atoi(code)
	os.Exit(n)
}
