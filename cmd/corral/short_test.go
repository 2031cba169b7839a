package main

import "testing"

// slow skips a test that takes seconds under -short, the inner loop
// (go test -short ./...); CI runs every test.
func slow(t *testing.T, takes string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("takes %s; runs without -short", takes)
	}
}
