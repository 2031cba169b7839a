package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomJSON is a random value of what JSON holds, nested up to depth.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth == 0 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.NormFloat64() * 1e6
	case 3:
		return -r.Int64N(1 << 40)
	case 4:
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteRune([]rune("a\"\\/\n\t<>&é😀,:[]{} \u2028\x01")[r.IntN(20)])
		}
		return sb.String()
	case 5, 6:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomJSON(r, depth-1)
		}
		return a
	default:
		m := map[string]any{}
		for i := range r.IntN(4) {
			m[fmt.Sprintf("k%d:\"{%d", i, r.IntN(9))] = randomJSON(r, depth-1)
		}
		return m
	}
}

// indentCompact writes what json.Indent writes, over the daemon's
// answers and random values; what is not compact JSON, or is cut, it
// refuses.
func TestIndentCompact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var inputs [][]byte
	for _, n := range []int{0, 3, 50} {
		b, _ := json.Marshal(manyPanes(n))
		inputs = append(inputs, b)
	}
	for range 2000 {
		b, _ := json.Marshal(randomJSON(r, 5))
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		var want, got bytes.Buffer
		if err := json.Indent(&want, in, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := indentCompact(&got, in); err != nil || got.String() != want.String() {
			t.Fatalf("%s: %v\ngot:\n%s\nwant:\n%s", in, err, got.String(), want.String())
		}
	}
	for _, bad := range []string{`[{"id":`, `[{"id":"p1}]`, `[1]]`, `{"a": 1}`, "[\n1]", `["a\"]`} {
		if err := indentCompact(&bytes.Buffer{}, []byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
