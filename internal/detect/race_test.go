//go:build race

package detect

func init() { raceBuild = true }
