//go:build race

package fleet

func init() { raceBuild = true }
