//go:build race

package rules

func init() { raceBuild = true }
