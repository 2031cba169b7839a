package cli

import (
	"fmt"

	rulesdata "github.com/corral-dev/corral/agents"
	"github.com/corral-dev/corral/internal/rules"
)

// loader is the rule loader for this user: embedded manifests overridden
// by $XDG_CONFIG_HOME/corral/rules.
func loader() rules.Loader {
	return rules.Loader{Embedded: rulesdata.Rules, UserDir: rules.DefaultUserDir()}
}

// loadRules loads the rules in force, warning about broken user files (the
// embedded version of each stays in force).
func loadRules(io IO) *rules.Set {
	set, errs := loader().Load(nil)
	for _, err := range errs {
		fmt.Fprintf(io.Stderr, "corral: warning: %v (the built-in rules stay in force)\n", err)
	}
	return set
}

// manifestFor resolves --agent; "" is fine (recognise from the screen).
func manifestFor(set *rules.Set, agent string) error {
	if agent == "" {
		return nil
	}
	if _, ok := set.ByName(agent); !ok {
		return usagef("unknown agent %q; corral rules list shows the agents it knows", agent)
	}
	return nil
}
