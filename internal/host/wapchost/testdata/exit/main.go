// Command exit is a waPC test guest whose main ends with an explicit os.Exit(code); the tests
// build it with -ldflags=-X main.code=N to check how the host treats each exit code.
package main

import (
	"os"
	"strconv"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

// code is set with -ldflags=-X; TinyGo 0.41 ignored -X on a variable with an initialiser.
var code string

func main() {
	wapc.RegisterFunction("echo", func(p []byte) ([]byte, error) { return p, nil })
	n, _ := strconv.Atoi(code) // "" is 0
	os.Exit(n)
}
