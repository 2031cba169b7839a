package ruleswatch

import (
	"fmt"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/rules"
)

// Problems words a load's errors for a user, saying what is in force
// instead.
func Problems(errs []error, instead string) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%v (%s)", e, instead))
	}
	return out
}

// Describe describes a set of manifests.
func Describe(set *rules.Set, problems []string) api.Rules {
	out := api.Rules{Manifests: []api.Manifest{}, Problems: append([]string{}, problems...)}
	for _, m := range set.All() {
		out.Manifests = append(out.Manifests, api.Manifest{Name: m.Name, Rules: len(m.Rules),
			Processes: append([]string{}, m.Processes...), Source: m.Source})
	}
	return out
}
