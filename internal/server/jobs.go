package server

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/headless"
	"github.com/corral-dev/corral/internal/httpapi"
	"github.com/corral-dev/corral/internal/jobs"
)

// The daemon's headless jobs are internal/jobs'; the server registers
// them in its pane set, beside the panes, and serves their routes.

var _ httpapi.JobFeed = jobs.Feed{}

// newJobs is the daemon's side of its jobs: they are held in the state
// folder, and their changes are recorded as a pane's are.
func (s *Server) newJobs() *jobs.Host {
	return jobs.New(jobs.Options{StateDir: s.opts.StateDir, Socket: s.opts.Socket, HolderExe: holderExe,
		Logf: s.opts.Logf, Record: s.record})
}

// Exec starts a headless job.
func (s *Server) Exec(req api.ExecRequest) (api.Pane, error) {
	if len(req.Command) == 0 {
		return api.Pane{}, httpapi.BadRequest(errors.New("no command; say what to run after --"))
	}
	if err := checkRunFields(api.RunRequest{Name: req.Name, Command: req.Command, Cwd: req.Cwd, Env: req.Env}); err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	if err := checkRunFields(api.RunRequest{Env: req.CallerEnv}); err != nil {
		return api.Pane{}, httpapi.BadRequest(fmt.Errorf("caller environment: %w", err))
	}
	o, keep, err := jobs.FromRequest(req, s.currentRules())
	if err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	j, err := s.startJob(req.Name, o, keep)
	if err != nil {
		return api.Pane{}, httpapi.BadRequest(err)
	}
	return j.JSON(), nil
}

// startJob reserves an id and the name for a job, starts it and registers
// it.
func (s *Server) startJob(name string, o headless.Options, keep jobs.Keep) (*jobs.Job, error) {
	id, _, err := s.set.Reserve(name)
	if err != nil {
		return nil, err
	}
	j := s.jobs.Start(id, name, o, keep)
	if !s.set.RegisterJob(id, name, j) {
		return nil, errors.New("the daemon is shutting down")
	}
	return j, nil
}

// adoptJobs takes the held jobs of the state folder again, each under its
// own id.
func (s *Server) adoptJobs() {
	s.jobs.Adopt(func(id, name string) error {
		got, _, err := s.set.ReserveAs(id, name)
		if err == nil && got != id {
			s.set.Unreserve(got)
			err = errors.New("its id is taken")
		}
		return err
	}, func(j *jobs.Job) { s.set.RegisterJob(j.ID(), j.Name(), j) })
}

// JobFeed follows a headless job for its stream.
func (s *Server) JobFeed(ref string) (httpapi.JobFeed, error) {
	f, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	if f.job == nil {
		return nil, httpapi.BadRequest(errors.New("not a headless job; corral events shows a pane's changes"))
	}
	return f.job.Feed(), nil
}

// endJob ends a job at shutdown; at a hand-over, a held job is let go
// instead, for the next daemon.
func (s *Server) endJob(j *jobs.Job) {
	if s.set.HandingOver() && j.LetGo() {
		return
	}
	j.Close(s.opts.KillGrace)
}

// jobHeldRunning reports whether id is a held job still running here:
// its processes are its holder's, not left behind.
func (s *Server) jobHeldRunning(id string) bool {
	j, _ := s.set.Job(id)
	return j != nil && j.HeldRunning()
}

// forgetJob removes an ended held job's folder.
func (s *Server) forgetJob(j *jobs.Job) {
	if err := j.Forget(); err != nil {
		s.opts.Logf("%v", err)
	}
}
