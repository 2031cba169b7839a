package roster

import (
	"fmt"
	"slices"
	"testing"
)

func ids(r *Roster) []string { return slices.Collect(r.All()) }

func TestNamesAndIDsAreUniqueAcrossMembersAndStarts(t *testing.T) {
	r := New()
	r.Add("pa", "first")
	starting, err := r.Reserve("second")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		taken bool
	}{
		{"first", true},  // a member's name
		{"pa", true},     // a member's id
		{"second", true}, // a start in flight's name
		{starting, true}, // a start in flight's id
		{"third", false}, // nobody's
		{"", false},      // no name
	} {
		if err := r.Taken(tc.name); (err != nil) != tc.taken {
			t.Errorf("Taken(%q) = %v, want taken %v", tc.name, err, tc.taken)
		}
	}
	if _, err := r.Reserve("first"); err == nil || err.Error() != "a pane named first exists; pick another --name, or remove it with corral rm first" {
		t.Errorf("reserving a member's name: %v", err)
	}
	if !r.Reserved(starting) || r.Has(starting) {
		t.Errorf("a reservation: reserved %v member %v", r.Reserved(starting), r.Has(starting))
	}
	r.Add(starting, "second")
	if r.Reserved(starting) || !r.Has(starting) {
		t.Errorf("an added reservation: reserved %v member %v", r.Reserved(starting), r.Has(starting))
	}
	if id, ok := r.Named("second"); !ok || id != starting {
		t.Errorf("Named(second) = %q %v, want %q", id, ok, starting)
	}
	if err := r.Taken("second"); err == nil {
		t.Error("an added member's name is free")
	}
}

func TestUnreserveFreesTheName(t *testing.T) {
	r := New()
	a, _ := r.Reserve("x")
	if _, err := r.Reserve("x"); err == nil {
		t.Fatal("two starts reserved one name")
	}
	r.Unreserve(a)
	r.Unreserve(a) // twice: no harm
	if r.Reserved(a) {
		t.Error("still reserved")
	}
	if _, err := r.Reserve("x"); err != nil {
		t.Errorf("the name given back: %v", err)
	}
}

func TestRereserveKeepsAFreeID(t *testing.T) {
	r := New()
	r.Add("pa", "first")
	other, _ := r.Reserve("")
	for _, tc := range []struct {
		want string
		kept bool
	}{
		{"k3f9q", true},  // free
		{"pa", false},    // a member's id
		{"first", false}, // a member's name
		{other, false},   // another start's id
		{"", false},
	} {
		got, err := r.Reserve("restored")
		if err != nil {
			t.Fatal(err)
		}
		id := r.Rereserve(got, tc.want)
		if (id == tc.want) != tc.kept || (!tc.kept && id != got) {
			t.Errorf("Rereserve(%q) = %q (new id %q), want kept %v", tc.want, id, got, tc.kept)
		}
		if !r.Reserved(id) || (id != got && r.Reserved(got)) {
			t.Errorf("Rereserve(%q): the reservation is not on %q alone", tc.want, id)
		}
		if err := r.Taken("restored"); err == nil {
			t.Errorf("Rereserve(%q) lost the name's reservation", tc.want)
		}
		r.Unreserve(id)
		if err := r.Taken("restored"); err != nil {
			t.Errorf("Rereserve(%q): the name stays taken after the reservation went: %v", tc.want, err)
		}
	}
}

func TestStartOrderSurvivesRemovals(t *testing.T) {
	r := New()
	for i := range 6 {
		r.Add(fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i))
	}
	for _, id := range []string{"p0", "p3", "p5"} {
		if !r.Remove(id) {
			t.Errorf("Remove(%s) found nothing", id)
		}
	}
	if r.Remove("p3") {
		t.Error("removed twice")
	}
	r.Add("p6", "n3") // a removed member's name is free again
	if got, want := ids(r), []string{"p1", "p2", "p4", "p6"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if r.Len() != 4 {
		t.Errorf("Len %d", r.Len())
	}
	if id, _ := r.Named("n3"); id != "p6" {
		t.Errorf("n3 names %q", id)
	}
	if _, ok := r.Named("n0"); ok {
		t.Error("a removed member's name still names it")
	}
}

// A watched tmux pane's name may repeat another's: the newest has it, and
// removing the older one leaves the newest its name.
func TestARepeatedNameStaysWithTheNewest(t *testing.T) {
	r := New()
	r.Add("old", "shell")
	r.Add("new", "shell")
	if id, _ := r.Named("shell"); id != "new" {
		t.Errorf("shell names %q, want new", id)
	}
	r.Remove("old")
	if id, _ := r.Named("shell"); id != "new" {
		t.Errorf("after the older one went, shell names %q, want new", id)
	}
}

func TestNewIDsAreFree(t *testing.T) {
	r := New()
	seen := map[string]bool{}
	for range 2000 {
		id, err := r.Reserve("")
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] || len(id) != 5 {
			t.Fatalf("id %q: seen %v", id, seen[id])
		}
		seen[id] = true
		r.Add(id, "")
	}
}

// Removing a pane costs the same at any number of members.
func BenchmarkRemove(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := New()
			for i := range n {
				r.Add(fmt.Sprint(i), "")
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				id := fmt.Sprint(i % n)
				r.Remove(id)
				r.Add(id, "")
				i += 7
			}
		})
	}
}
