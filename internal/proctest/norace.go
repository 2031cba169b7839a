//go:build !race

package proctest

// Race says the binary was built with the race detector (race.go).
const Race = false
