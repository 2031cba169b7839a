// Package roster is the register of a daemon's panes and jobs: their
// ids, their names and the order they started in. An id or a name names
// one pane or job at most, across both kinds; a start in flight reserves
// its id and name before what it starts is ready.
//
// A Roster is not safe for concurrent use: its owner locks around it (the
// daemon's table lock, paneset.Set's mu). Every operation but All and Len is
// O(1) in the number of members.
package roster

import (
	"container/list"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"iter"
	"strings"
)

// Roster is the ids, names and start order of a daemon's panes and jobs.
// The zero value is not ready: use New.
type Roster struct {
	// members holds each member's place in order.
	members map[string]*list.Element
	order   list.List // of member, oldest first
	// names finds a member's id by its name. A name is unique, but a
	// watched tmux pane's may repeat one (Add does not refuse it): the
	// newest has it.
	names map[string]string
	// reserved holds the ids and names of starts in flight; they are
	// taken until added or given up.
	reserved map[string]string
	// reservedNames counts the reservations of each name.
	reservedNames map[string]int
}

type member struct{ id, name string }

// New is an empty roster.
func New() *Roster {
	return &Roster{members: map[string]*list.Element{}, names: map[string]string{},
		reserved: map[string]string{}, reservedNames: map[string]int{}}
}

// Has says whether a member has the id.
func (r *Roster) Has(id string) bool {
	_, ok := r.members[id]
	return ok
}

// Named is the id of the member named name.
func (r *Roster) Named(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	id, ok := r.names[name]
	return id, ok
}

// Taken says why name cannot be given to a new pane or job (nil when it
// can): a member has it as its name or its id, or a start in flight
// reserved it as either.
func (r *Roster) Taken(name string) error {
	if name == "" {
		return nil
	}
	_, named := r.names[name]
	if named || r.Has(name) || r.Reserved(name) || r.reservedNames[name] > 0 {
		return fmt.Errorf("a pane named %s exists; pick another --name, or remove it with corral rm %s", name, name)
	}
	return nil
}

// Reserve takes a new id and name for a start, or says why name is
// taken. Add or Unreserve gives them back.
func (r *Roster) Reserve(name string) (string, error) {
	if err := r.Taken(name); err != nil {
		return "", err
	}
	id := r.newID()
	r.reserve(id, name)
	return id, nil
}

// Rereserve moves got's reservation (Reserve's) to id when no member or
// reservation has id as an id or a name (a restored pane keeps its id),
// and returns the id reserved.
func (r *Roster) Rereserve(got, id string) string {
	if id == "" || id == got || !r.free(id) {
		return got
	}
	name := r.reserved[got]
	r.Unreserve(got)
	r.reserve(id, name)
	return id
}

// Reserved says whether a start in flight reserved id.
func (r *Roster) Reserved(id string) bool {
	_, ok := r.reserved[id]
	return ok
}

// Unreserve gives a reservation back.
func (r *Roster) Unreserve(id string) {
	name, ok := r.reserved[id]
	if !ok {
		return
	}
	delete(r.reserved, id)
	if name != "" {
		if r.reservedNames[name]--; r.reservedNames[name] <= 0 {
			delete(r.reservedNames, name)
		}
	}
}

// Add makes id a member named name, the newest in start order; its
// reservation, if any, goes. Adding an id that is a member already moves
// it to the end.
func (r *Roster) Add(id, name string) {
	r.Unreserve(id)
	if el, ok := r.members[id]; ok {
		r.order.Remove(el)
	}
	r.members[id] = r.order.PushBack(member{id, name})
	if name != "" {
		r.names[name] = id
	}
}

// Remove forgets a member: its id and name are free again. It says
// whether id was one.
func (r *Roster) Remove(id string) bool {
	el, ok := r.members[id]
	if !ok {
		return false
	}
	m := r.order.Remove(el).(member)
	delete(r.members, id)
	if r.names[m.name] == id {
		delete(r.names, m.name)
	}
	return true
}

// All is the members' ids, oldest first. The roster must not change
// while it is read.
func (r *Roster) All() iter.Seq[string] {
	return func(yield func(string) bool) {
		for el := r.order.Front(); el != nil; el = el.Next() {
			if !yield(el.Value.(member).id) {
				return
			}
		}
	}
}

// Len is the number of members.
func (r *Roster) Len() int { return len(r.members) }

func (r *Roster) reserve(id, name string) {
	r.reserved[id] = name
	if name != "" {
		r.reservedNames[name]++
	}
}

// free says whether s is no member's id or name and no reservation's id.
func (r *Roster) free(s string) bool {
	_, named := r.names[s]
	return !r.Has(s) && !r.Reserved(s) && !named
}

// newID is a short random id, like "k3f9q", that no member or
// reservation has as an id and no member has as a name.
func (r *Roster) newID() string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:5]
		if r.free(id) {
			return id
		}
	}
}
