package cli

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/config"
	"github.com/corral-dev/corral/internal/handover"
	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/server"
	"github.com/spf13/pflag"
)

func runServe(fs *pflag.FlagSet) runFunc {
	replace := fs.Bool("replace", false, "take over the running daemon's panes (it hands them over and exits)")
	return func(ctx context.Context, std IO, _ []string) error {
		osproc.CloseOnExecInherited()
		server.TuneGC()
		logger := log.New(std.Stderr, "corral: ", log.LstdFlags)
		cfg, err := config.LoadConfig(config.ConfigPath())
		if err != nil {
			return err
		}
		sock, err := config.CheckSocketPath()
		if err != nil {
			return err
		}
		stateDir, err := config.CheckStateDir()
		if err != nil {
			return err
		}
		opts := server.Options{Socket: sock, StateDir: stateDir, Loader: loader(), Logf: logger.Printf, Config: cfg}
		newServer := newServerAfterStopping
		if *replace {
			recv, err := handover.NewReceiver(opts.StateDir)
			if err != nil {
				logger.Printf("%v; the old daemon's socket is taken once it has let go of it", err)
			} else {
				defer recv.Close()
			}
			_, in, err := handOver(ctx, recv)
			if err != nil {
				return err
			}
			opts.Inherit = in
			if in == nil {
				newServer = newServerReplacing
			}
		}
		srv, err := newServer(opts)
		if err != nil {
			return err
		}
		logger.Printf("serving on %s (event log in %s)", sock, config.StateDir())
		err = srv.Serve(ctx)
		<-srv.Done()
		logger.Printf("stopped")
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
}

// newServerAfterStopping makes the server. When another daemon holds the
// lock but no longer answers, it is stopping (a restart's hand-over, a
// shutdown: the socket goes before the lock), and the clients that start
// a daemon meanwhile would each find the lock taken and go, leaving none:
// it waits for the lock instead, up to HandoverWait, unless a daemon
// answers meanwhile.
func newServerAfterStopping(opts server.Options) (*server.Server, error) {
	deadline := time.Now().Add(HandoverWait)
	c := clientNoStart()
	for {
		srv, err := server.New(opts)
		if err == nil || !errors.Is(err, server.ErrRunning) || time.Now().After(deadline) {
			return srv, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		answers := c.Ping(ctx) == nil
		cancel()
		if answers {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runShutdown(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, _ []string) error {
		c := clientNoStart()
		if err := c.Ping(ctx); err != nil {
			fmt.Fprintln(std.Stderr, "corral shutdown: no daemon is running")
			return nil
		}
		if err := c.Do(ctx, "POST", "/v1/shutdown", struct{}{}, nil); err != nil {
			return apiError(err)
		}
		// Wait until the socket stops answering (every pane has been ended),
		// then until the daemon lets go of its lock: a command run right after
		// starts a new daemon, which needs it.
		deadline := time.Now().Add(30 * time.Second)
		for c.Ping(ctx) == nil || !lockFree(config.SocketPath()+".lock") {
			if time.Now().After(deadline) {
				return fmt.Errorf("the daemon has not ended 30 s after it was told to; see %s", filepath.Join(config.StateDir(), "daemon.log"))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-afterMillis(20):
			}
		}
		return nil
	}
}

// lockFree says no daemon holds the lock file (or there is none).
func lockFree(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
