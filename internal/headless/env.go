package headless

import "os"

// baseEnv is the environment a run's Env is added to: the one given, or
// corral's own.
func baseEnv(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return append([]string(nil), env...)
}
