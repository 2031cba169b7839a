//go:build race

package proctest

// Race says the binary was built with the race detector, whose runs are
// several times slower: a test that shortens a wait for its own runs keeps
// the real one under it.
const Race = true
