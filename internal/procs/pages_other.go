//go:build !linux

package procs

// ReleaseCodePages does nothing elsewhere than Linux.
func ReleaseCodePages() (int, error) { return 0, nil }
