package server

import (
	"errors"
	"net/http"
	"sync"
	"syscall"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/board"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/term"
)

// boardBackend gives the web board the daemon's panes.
type boardBackend struct{ s *Server }

func (b boardBackend) Panes() []api.Pane {
	return append(b.s.listJSON(), b.s.set.Lost()...)
}

func (b boardBackend) StyledScreen(id string) ([][]term.Run, error) {
	f, err := b.s.find(id)
	if err != nil {
		return nil, err
	}
	if f.job != nil {
		return f.job.StyledRows(), nil
	}
	return f.pane.P.StyledRows(), nil
}

func (b boardBackend) Answer(id, choice string) (string, error) {
	f, err := b.s.find(id)
	if err != nil {
		return "", err
	}
	return f.answer(choice)
}

func (b boardBackend) Send(id, text string, enter bool) error {
	f, err := b.s.find(id)
	if err != nil {
		return err
	}
	if f.job != nil {
		return f.job.RefuseInput()
	}
	return typeText(f.pane, text, enter, true)
}

func (b boardBackend) Kill(id string) error {
	f, err := b.s.find(id)
	if err != nil {
		return err
	}
	return kill(f.killer(), syscall.SIGTERM, true, api.DefaultKillGrace)
}

func (b boardBackend) Prompt(id string) board.Prompt {
	f, err := b.s.find(id)
	if err != nil {
		return board.Prompt{}
	}
	if f.job != nil {
		return board.Prompt{Answers: f.job.Answers()}
	}
	var pr board.Prompt
	pr.Answers, pr.Options = f.pane.P.PromptAnswers()
	if q := f.pane.Ext.question.Load(); q != nil && pr.Options {
		pr.Labels = *q
	}
	return pr
}

func (b boardBackend) Changed() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		// The hub drops a subscription that falls behind; the board then
		// subscribes again rather than going deaf to changes.
		for {
			sub, _ := b.s.hub.Subscribe(^uint64(0))
			for ok := true; ok; {
				select {
				case <-done:
					sub.Close()
					return
				case _, ok = <-sub.C:
					select {
					case ch <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	var once sync.Once
	return ch, func() { once.Do(func() { close(done) }) }
}

// Board starts the web board (once) and returns its address.
func (s *Server) Board(req api.BoardRequest) (api.BoardResult, error) {
	if req.Addr == "" {
		req.Addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.board != nil {
		urls := s.board.SignIn()
		return api.BoardResult{URL: urls[0], URLs: urls, Started: false}, nil
	}
	b, err := board.Start(req.Addr, req.ListenAny, s.fleet.BoardBackend(boardBackend{s}))
	if err != nil {
		status := http.StatusBadRequest
		if !errors.Is(err, board.ErrRemote) {
			status = http.StatusInternalServerError
		}
		return api.BoardResult{}, httpapi.Coded(status, "bad_request", err)
	}
	s.board = b
	urls := b.SignIn()
	return api.BoardResult{URL: urls[0], URLs: urls, Started: true}, nil
}
