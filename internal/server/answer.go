package server

// answer answers a pane's or a job's request: a job's at once (see
// jobs.Job.Answer), a pane's once its prompt can take the keys (see
// pane.Pane.AnswerPrompt).
func (f found) answer(choice string) (string, error) {
	if f.job != nil {
		return f.job.Answer(choice)
	}
	return f.pane.P.AnswerPrompt(choice)
}
