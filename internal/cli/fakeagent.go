package cli

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/internal/lab/fakeagent"
)

// runFakeAgent runs the built-in fake agent (for demos and tests).
func runFakeAgent(_ context.Context, _ IO, args []string) error {
	if code := fakeagent.Main(args); code != 0 {
		return &exitError{code: code, err: fmt.Errorf("")}
	}
	return nil
}
