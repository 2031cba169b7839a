// Package httpapi is corral's HTTP API on the daemon's unix socket: the
// route table, the wire (a request body decoded strictly and bounded, an
// answer as JSON, a failure as api.Error with its status), and thin
// handlers over the daemon's Service. A handler reads the request, calls
// one method and writes what it returns; what a route does lives in the
// daemon (internal/server, and internal/fleetlink for the fleet's routes),
// which knows nothing of the wire.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/internal/api"
)

// MaxBody bounds a request body.
const MaxBody = 1 << 20

// Error is a failure the API answers with its own status and code
// (api.Error's code: "not_found", "blocked", ...). Any other error is
// answered 500 "internal".
type Error struct {
	Status int
	Code   string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Coded is err answered with status and code.
func Coded(status int, code string, err error) error {
	return &Error{Status: status, Code: code, Err: err}
}

// BadRequest is a request the daemon cannot take as it is (400).
func BadRequest(err error) error { return Coded(http.StatusBadRequest, "bad_request", err) }

// NotFound is a pane, job or host that is not there (404).
func NotFound(err error) error { return Coded(http.StatusNotFound, "not_found", err) }

// Conflict is a request the pane's state refuses (409), with code saying
// which state ("blocked", "exited", "running", ...).
func Conflict(code string, err error) error { return Coded(http.StatusConflict, code, err) }

// Decode reads a request body into v: at most MaxBody bytes, no unknown
// fields. On a bad body it answers 400 and returns false.
func Decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		Fail(w, http.StatusBadRequest, "bad_request", fmt.Errorf("request body: %v", err))
		return false
	}
	return true
}

// Reply answers v as JSON.
func Reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Fail answers a failure as api.Error with status.
func Fail(w http.ResponseWriter, status int, code string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Error: err.Error(), Code: code})
}

// WriteError answers err: an *Error with its status and code, anything
// else as 500 "internal".
func WriteError(w http.ResponseWriter, err error) {
	if e, ok := errors.AsType[*Error](err); ok {
		Fail(w, e.Status, e.Code, err)
		return
	}
	Fail(w, http.StatusInternalServerError, "internal", err)
}

// answer replies v, or the failure err.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		WriteError(w, err)
		return
	}
	Reply(w, v)
}

// decodeCall decodes a request of type Req and answers what call returns.
func decodeCall[Req, Res any](call func(Req) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !Decode(w, r, &req) {
			return
		}
		res, err := call(req)
		answer(w, res, err)
	}
}

// decodeRefCall is decodeCall for a pane's route ({id}): a pane that is
// not there is answered 404 before a bad body is.
func decodeRefCall[Req, Res any](panes Panes, call func(r *http.Request, ref string, req Req) (Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("id")
		if err := panes.Exists(ref); err != nil {
			WriteError(w, err)
			return
		}
		var req Req
		if !Decode(w, r, &req) {
			return
		}
		res, err := call(r, ref, req)
		answer(w, res, err)
	}
}
