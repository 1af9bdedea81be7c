package wasmbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// turnsHost is a module whose instances record which module evaluated, in order, and answer as the policy
// does when it accepts.
type turnsHost struct {
	name string
	log  *[]string
}

func (h turnsHost) NewInstance(context.Context) (Instance, error) { return h, nil }
func (h turnsHost) Close(context.Context) error                   { return nil }
func (h turnsHost) MemorySize() uint32                            { return 65536 }
func (h turnsHost) Call(context.Context, string, []byte) ([]byte, error) {
	*h.log = append(*h.log, h.name)
	return []byte(`{"accepted":true}`), nil
}

// The targets take turns in bursts, the order rotating, and each gets n evaluations after its warm-up.
func TestMeasure_TargetsTakeTurns(t *testing.T) {
	var log []string
	a := &module{name: "a", host: turnsHost{"a", &log}}
	b := &module{name: "b", host: turnsHost{"b", &log}}
	sc := scenario{name: "s"}
	const n = 40
	results, err := measure(context.Background(), []target{{a, sc}, {b, sc}}, n)
	if err != nil {
		t.Fatal(err)
	}
	// Rounds of burst (10) evaluations from -n/10 (the warm-up) to n, the order rotating: a b, b a, a b,
	// b a, then the last 4 of each; a turn next to the same target's turn reads as one run here.
	want := "a10 b20 a20 b20 a14 b4"
	if got := runs(log); got != want {
		t.Errorf("evaluations in order: %s, want %s", got, want)
	}
	for k, r := range results {
		if r.min <= 0 || r.p50 < r.min || r.p99 < r.p50 || r.memory != 65536 {
			t.Errorf("target %d: %+v", k, r)
		}
	}
	if len(log) != 2*(n+n/10) {
		t.Errorf("%d evaluations, want %d (n and a warm-up of n/10 per target)", len(log), 2*(n+n/10))
	}
}

// A target whose answer is not an acceptance stops the measurement with the module and scenario named.
func TestMeasure_RefusalIsAnError(t *testing.T) {
	var log []string
	_, err := measure(context.Background(), []target{{&module{name: "m", host: refusingHost{turnsHost{"m", &log}}}, scenario{name: "s"}}}, 20)
	if err == nil || !strings.Contains(err.Error(), "m/s: unexpected answer") {
		t.Fatalf("err = %v", err)
	}
}

type refusingHost struct{ turnsHost }

func (h refusingHost) NewInstance(context.Context) (Instance, error) { return h, nil }
func (h refusingHost) Call(context.Context, string, []byte) ([]byte, error) {
	return []byte(`{"accepted":false}`), nil
}

// With a mutating floor, the floors and the policy take turns on a scenario, the typed module is measured
// after them, and each result is kept under its module's key.
func TestMeasureScenarios_MutatingFloorTakesTurns(t *testing.T) {
	var log []string
	m := func(name string) *module { return &module{name: name, host: turnsHost{name, &log}} }
	s := suite{floor: m("floor"), mutFloor: m("mutfloor"), policy: m("policy"), typed: m("typed-json")}
	results := map[string]result{}
	if err := measureScenarios(context.Background(), s, []scenario{{name: "s"}}, Options{N: 20}, results, nil); err != nil {
		t.Fatal(err)
	}
	// Rounds of 10 from -2 (the warm-up) to 20, the order rotating, then the typed module's 20 and warm-up.
	want := "floor10 mutfloor10 policy10 mutfloor10 policy10 floor10 policy2 floor2 mutfloor2 typed-json22"
	if got := runs(log); got != want {
		t.Errorf("evaluations in order: %s, want %s", got, want)
	}
	for _, key := range []string{"floor:s", "mutfloor:s", "s", "typed:s"} {
		if results[key].p50 <= 0 {
			t.Errorf("no result under %q: %v", key, results)
		}
	}
}

// runs writes a log of evaluations as its runs of the same module: "a10 b20".
func runs(log []string) string {
	var out []string
	for i := 0; i < len(log); {
		j := i
		for j < len(log) && log[j] == log[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%s%d", log[i], j-i))
		i = j
	}
	return strings.Join(out, " ")
}
