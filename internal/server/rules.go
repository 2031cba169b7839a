package server

import (
	"net/http"

	"github.com/corral-dev/corral/internal/ruleswatch"
)

func (s *Server) handleRules(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	set, problems := s.rules, s.rulesProblems
	s.mu.Unlock()
	reply(w, ruleswatch.Describe(set, problems))
}
