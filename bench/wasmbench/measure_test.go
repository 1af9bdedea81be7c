package wasmbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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
		// A round's median for each round with evaluations past the warm-up: 6 (the warm-up's last
		// round), 10, 10, 10 and 4 of them.
		if len(r.rounds) != 5 {
			t.Errorf("target %d: %d rounds, want 5", k, len(r.rounds))
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

// A scenario the policy must refuse (the bounded answer) is measured, not stopped, by a refusal.
func TestMeasure_ARefusedScenarioMayBeRefused(t *testing.T) {
	var log []string
	_, err := measure(context.Background(), []target{{&module{name: "m", host: refusingHost{turnsHost{"m", &log}}}, scenario{name: "s", refused: true}}}, 20)
	if err != nil {
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

// Without the typed module (-typed ”), a scenario is measured on the floor and the policy alone.
func TestMeasureScenarios_TypedModuleCanBeLeftOut(t *testing.T) {
	var log []string
	m := func(name string) *module { return &module{name: name, host: turnsHost{name, &log}} }
	s := suite{floor: m("floor"), policy: m("policy")}
	results := map[string]result{}
	if err := measureScenarios(context.Background(), s, []scenario{{name: "s"}}, Options{N: 20}, results, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := runs(log), "floor10 policy20 floor12 policy2"; got != want {
		t.Errorf("evaluations in order: %s, want %s", got, want)
	}
	if _, ok := results["typed:s"]; ok {
		t.Errorf("a typed result without a typed module: %v", results)
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

// roundRatio compares two targets round by round: a spell in which both ran slowly cancels out, where the
// ratio of their p50s would not.
func TestRoundRatio_IsTheMedianOfEachRoundsRatio(t *testing.T) {
	us := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Microsecond
		}
		return out
	}
	// The p50s given say 0.5; every round says 2, the one both ran slowly included.
	a := result{p50: 100 * time.Microsecond, rounds: us(100, 100, 100, 400, 100)}
	b := result{p50: 200 * time.Microsecond, rounds: us(50, 50, 50, 200, 50)}
	if got := roundRatio(a, b); got != 2 {
		t.Errorf("roundRatio = %v, want 2", got)
	}
	if got := roundRatio(b, a); got != 0.5 {
		t.Errorf("roundRatio reversed = %v, want 0.5", got)
	}
	// An even number of rounds: the mean of the middle two.
	if got := roundRatio(result{rounds: us(10, 30, 40, 90)}, result{rounds: us(10, 10, 10, 10)}); got != 3.5 {
		t.Errorf("roundRatio of four rounds = %v, want 3.5", got)
	}
	// No rounds in common: the p50s.
	if got := roundRatio(result{p50: 30}, result{p50: 10}); got != 3 {
		t.Errorf("roundRatio without rounds = %v, want 3", got)
	}
}
