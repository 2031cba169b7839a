// Package ruleswatch reloads the user's rule manifests when their folder
// changes. It keeps the file-system watch out of the pure rules package.
package ruleswatch

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/corral-dev/corral/internal/rules"
)

// DefaultDebounce is how long Watch waits for a burst of writes to end.
const DefaultDebounce = 200 * time.Millisecond

// Watch reloads l's rules whenever a file in the user folder changes, and
// calls onChange with the new set and the problems found (a broken file
// keeps its previous version in force). It watches the folder, not the
// files: editors save by renaming. The folder is created if missing. Once
// the watch is in place it reloads and calls onChange at once, so no change
// falls between the caller's load and the watch. Watch returns when ctx ends.
func Watch(ctx context.Context, l rules.Loader, current *rules.Set, debounce time.Duration, onChange func(*rules.Set, []error)) error {
	if l.UserDir == "" {
		return fmt.Errorf("watch rules: no user rules folder")
	}
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	if err := os.MkdirAll(l.UserDir, 0o700); err != nil {
		return fmt.Errorf("watch rules: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch rules: %w", err)
	}
	defer w.Close()
	if err := w.Add(l.UserDir); err != nil {
		return fmt.Errorf("watch rules %s: %w", l.UserDir, err)
	}
	// Reload once now the watch is in place: a change made between the
	// caller's load and this point would otherwise go unseen.
	current, errs := l.Load(current)
	onChange(current, errs)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			onChange(current, []error{fmt.Errorf("watch rules %s: %w", l.UserDir, err)})
		case <-timer.C:
			next, errs := l.Load(current)
			current = next
			onChange(next, errs)
		}
	}
}
