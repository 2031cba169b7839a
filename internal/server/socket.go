package server

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/internal/config"
)

// socketLook is how often the daemon looks for its socket file.
const socketLook = time.Second

// keepSocket looks for the daemon's socket file every socketLook. Someone
// may remove it: a cleaner of /tmp (where the socket is without
// XDG_RUNTIME_DIR), or whoever removed the daemon's folders (a user
// starting afresh, a test's end). Without it no client reaches this
// daemon, and the next one starts another, which cannot adopt this one's
// panes. So:
//   - with the state folder still there, the daemon listens at the same
//     path again, as long as the lock there is its own or it can take a
//     new one;
//   - with the state folder gone too, nothing could reach these panes or
//     adopt them again: the daemon shuts down, ending them, rather than
//     run on unseen.
func (s *Server) keepSocket(ctx context.Context) {
	t := time.NewTicker(socketLook)
	defer t.Stop()
	said := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := os.Lstat(s.opts.Socket); !errors.Is(err, fs.ErrNotExist) {
			said = ""
			continue
		}
		if _, err := os.Stat(s.opts.StateDir); errors.Is(err, fs.ErrNotExist) {
			s.opts.Logf("the socket %s and the state folder %s are gone: no client can reach this daemon, nor another adopt its panes; shutting down", s.opts.Socket, s.opts.StateDir)
			s.Shutdown()
			return
		}
		if err := s.listenAgain(); err != nil {
			if err.Error() != said { // said once, tried again at each look
				said = err.Error()
				s.opts.Logf("the socket %s was removed, and this daemon cannot listen there again: %v", s.opts.Socket, err)
			}
			continue
		}
		said = ""
		s.opts.Logf("the socket %s was removed; listening there again", s.opts.Socket)
	}
}

// listenAgain listens at the socket's path once more. The lock file there
// must be the one this daemon holds; if it is gone too, the daemon takes a
// new one there (failing if another daemon has since).
func (s *Server) listenAgain() error {
	lockPath := s.opts.Socket + ".lock"
	mine, err := s.lock.Stat()
	if err != nil {
		return err
	}
	there, err := os.Stat(lockPath)
	switch {
	case err == nil && os.SameFile(mine, there):
		ln, err := listenUnix(s.opts.Socket)
		if err != nil {
			return err
		}
		s.serveToo(ln, nil)
		return nil
	case err == nil:
		return errors.New("the lock file there is another's now (another daemon may hold it)")
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if _, err := os.Stat(filepath.Dir(s.opts.Socket)); errors.Is(err, fs.ErrNotExist) {
		if err := config.CheckPrivateDir(filepath.Dir(s.opts.Socket)); err != nil {
			return err
		}
	}
	lock, ln, err := lockAndListen(Options{Socket: s.opts.Socket})
	if err != nil {
		return err
	}
	s.serveToo(ln, lock)
	return nil
}

// serveToo serves ln beside the listener before it, and makes it (and
// lock, if new) the ones a hand-over passes on. The one before is left
// open (the first one's Serve ending would stop the daemon), and no longer
// removes the socket file when it closes: the file at its path is ln's.
func (s *Server) serveToo(ln net.Listener, lock *os.File) {
	s.mu.Lock()
	if ul, ok := s.ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	s.ln = ln
	if lock != nil {
		_ = s.lock.Close()
		s.lock = lock
	}
	s.mu.Unlock()
	go func() { _ = s.http.Serve(ln) }()
}
