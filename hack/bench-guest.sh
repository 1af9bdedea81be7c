#!/usr/bin/env bash
# Runs the Go benchmarks of policy/ and policy/internal/rawjson inside the WebAssembly guest (TinyGo, wasi,
# the policy's build flags, on wazero), to see what each piece costs where the policy really runs: make
# bench times whole evaluations, `go test -bench` times them natively, where they are 3-4x faster and
# allocate differently.
#
# The benchmarks are built from a copy of the packages, in a module of its own under a temporary directory:
# the packages' tests use go-cmp, whose initialisation TinyGo cannot run, so only the non-test files, each
# package's bench_test.go and the two helpers policy's needs are copied; TinyGo's testing has no b.Loop, so
# the timed loop is rewritten as `for range b.N` after b.ResetTimer. Each package's benchmarks run as a test
# binary of their own, policy's first; BENCH_REGEXP selects in both.
#
# Usage: TINYGO_FLAGS="..." hack/bench-guest.sh TINYGO [BENCH_REGEXP] [BENCHTIME]
# (make bench-guest passes the Makefile's TINYGO_FLAGS without -scheduler=none: the testing package starts
# goroutines)
set -euo pipefail

flags=${TINYGO_FLAGS:?set TINYGO_FLAGS to the policy build flags, or run make bench-guest}

tinygo=${1:?usage: hack/bench-guest.sh TINYGO [BENCH_REGEXP] [BENCHTIME]}
bench=${2:-.}
benchtime=${3:-1s}
root=$(cd "$(dirname "$0")/.." && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/policy"
for f in "$root"/policy/*.go; do
	case $f in *_test.go) ;; *) cp "$f" "$work/policy/" ;; esac
done
sed -e 's/for b.Loop() {/b.ResetTimer()\n\tfor range b.N {/' \
	-e 's|filepath.Join("..", "testdata"|filepath.Join("/testdata"|' \
	"$root/policy/bench_test.go" >"$work/policy/bench_test.go"
{
	printf 'package policy\n\nimport (\n\t"encoding/json"\n\t"testing"\n)\n\n'
	awk '/^\/\/ path walks/,/^}/' "$root/policy/helpers_test.go"
	awk '/^func mustJSON/,/^}/' "$root/policy/helpers_test.go"
} >"$work/policy/path_test.go"
if ! grep -q 'for range b.N' "$work/policy/bench_test.go" || ! grep -q '^func path' "$work/policy/path_test.go" ||
	! grep -q '^func mustJSON' "$work/policy/path_test.go"; then
	echo "bench-guest: policy/bench_test.go or policy/helpers_test.go changed shape; update this script" >&2
	exit 1
fi
# The packages under policy/internal go along, without their tests; the module keeps its path, which
# their imports name.
(cd "$root" && find policy/internal -name '*.go' ! -name '*_test.go') | while read -r f; do
	mkdir -p "$work/$(dirname "$f")"
	cp "$root/$f" "$work/$f"
done
# rawjson's benchmarks stand alone (their file uses no helper of the package's other tests).
rawjson=policy/internal/rawjson
sed -e 's/for b.Loop() {/b.ResetTimer()\n\tfor range b.N {/' \
	-e 's|filepath.Join("..", "..", "..", "testdata"|filepath.Join("/testdata"|' \
	"$root/$rawjson/bench_test.go" >"$work/$rawjson/bench_test.go"
if ! grep -q 'for range b.N' "$work/$rawjson/bench_test.go" || grep -q 'b\.Loop()\|"\.\."' "$work/$rawjson/bench_test.go"; then
	echo "bench-guest: $rawjson/bench_test.go changed shape; update this script" >&2
	exit 1
fi
cp "$root/go.mod" "$root/go.sum" "$work/"

wazero=$root/build/wazero
[ -x "$wazero" ] || (cd "$root" && go build -o "$wazero" github.com/tetratelabs/wazero/cmd/wazero)
for pkg in policy "$rawjson"; do
	echo "== $pkg"
	# shellcheck disable=SC2086 # the flags are words
	(cd "$work" && "$tinygo" test -c -o "$work/bench.wasm" $flags "./$pkg")
	"$wazero" run -mount="$root/testdata:/testdata:ro" "$work/bench.wasm" \
		-test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem
done
