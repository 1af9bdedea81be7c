// Command startup is a test guest for package preinit: its main does work worth snapshotting (a
// table filled at start-up, a map, a random number) and, when built with -ldflags=-X main.mode=...,
// something a snapshot cannot replay. Built by the tests with TinyGo; never part of the policy.
package main

import (
	"math/rand"
	"strconv"
	"strings"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

// mode is set with -ldflags=-X: "print" writes to stdout during start-up, "hostcall" calls the host.
var mode string

var (
	squares []int
	names   map[string]int
	draw    int
	starts  int
	calls   int
)

func main() {
	starts++
	for i := range 1000 {
		squares = append(squares, i*i)
	}
	names = map[string]int{"alice": 1, "bob": 2}
	draw = rand.Int()
	switch mode {
	case "print":
		println("hello from start-up")
	case "hostcall":
		_, _ = wapc.HostCall("kubewarden", "tracing", "log", []byte(`{"level":"info"}`))
	}
	wapc.RegisterFunctions(wapc.Functions{
		// state reports what start-up left and what this instance's calls have done since.
		"state": func([]byte) ([]byte, error) {
			calls++
			sum := 0
			for _, s := range squares {
				sum += s
			}
			return []byte(strings.Join([]string{
				"starts=" + strconv.Itoa(starts), "calls=" + strconv.Itoa(calls), "sum=" + strconv.Itoa(sum),
				"bob=" + strconv.Itoa(names["bob"]), "draw=" + strconv.Itoa(draw),
			}, " ")), nil
		},
		// grow allocates n KiB and keeps it, so that the heap must grow past the snapshot's memory.
		"grow": func(p []byte) ([]byte, error) {
			n, _ := strconv.Atoi(string(p))
			for range n {
				squares = append(squares, make([]int, 128)...)
			}
			return []byte(strconv.Itoa(len(squares))), nil
		},
	})
}
