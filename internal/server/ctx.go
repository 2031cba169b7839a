package server

import (
	"context"
	"time"
)

// context5s bounds one write to a client: a stalled client is dropped, not
// waited for.
func context5s(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 5*time.Second)
}
