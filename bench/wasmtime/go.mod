module github.com/seed-a6d343df/yunikorn-user-info-policy/bench/wasmtime

go 1.25.0

require (
	github.com/bytecodealliance/wasmtime-go/v37 v37.0.0
	github.com/seed-a6d343df/yunikorn-user-info-policy v0.0.0
)

require (
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
)

replace github.com/seed-a6d343df/yunikorn-user-info-policy => ../..
