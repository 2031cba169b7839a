//go:build race

package term

func init() { raceBuild = true }
