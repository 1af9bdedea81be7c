// Command guest is a waPC test guest for package wapchost: each operation exercises one part of
// the protocol. Built by the tests with TinyGo; never part of the policy.
package main

import (
	"errors"
	"strconv"
	"strings"
	"unsafe"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

// events records the order in which the host drove the guest.
var events []string

var counter int

//go:export wapc_init
func wapcInit() {
	events = append(events, "wapc_init")
}

func main() {
	events = append(events, "_start")
	wapc.RegisterFunctions(wapc.Functions{
		"events": func([]byte) ([]byte, error) {
			return []byte(strings.Join(events, ",")), nil
		},
		"echo": func(p []byte) ([]byte, error) { return p, nil },
		"incr": func([]byte) ([]byte, error) {
			counter++
			return []byte(strconv.Itoa(counter)), nil
		},
		"log": func(p []byte) ([]byte, error) {
			if _, err := wapc.HostCall("kubewarden", "tracing", "log", p); err != nil {
				return nil, err
			}
			return []byte("logged"), nil
		},
		"console": func(p []byte) ([]byte, error) {
			wapc.ConsoleLog(string(p))
			return nil, nil
		},
		// Answers the host's error text, so the test sees what the guest saw.
		"unknown": func([]byte) ([]byte, error) {
			_, err := wapc.HostCall("kubewarden", "net", "v1/dns_lookup_host", []byte(`"example.com"`))
			if err == nil {
				return []byte("no error"), nil
			}
			return []byte(err.Error()), nil
		},
		"fail": func(p []byte) ([]byte, error) {
			return nil, errors.New("refused: " + string(p))
		},
		"panic": func([]byte) ([]byte, error) {
			panic("kaboom")
		},
		// Never returns on its own: the host has to interrupt it.
		"spin": func([]byte) ([]byte, error) {
			for counter >= 0 {
				counter++
			}
			return nil, nil
		},
		"oob": func([]byte) ([]byte, error) {
			// Far past any linear memory the guest could have: a genuine wasm trap.
			b := *(*byte)(unsafe.Pointer(uintptr(0xfffffff0)))
			return []byte{b}, nil
		},
	})
}
