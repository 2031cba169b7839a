package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/safefile"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// enrollWait bounds a member's enrollment request: a hub of a cluster
// answers once the other hubs can have the credential, within shareWait.
const enrollWait = shareWait + 2*time.Second

// enroll trades the fleet token for this host's own credential, so that
// the host's later connections, and the config that keeps them, hold no
// token that could take another host's name.
func (m *Member) enroll() {
	resp, err := m.nc.Request(subjEnroll+m.o.Name, nil, enrollWait)
	if err == nil && strings.HasPrefix(string(resp.Data), hostTokenPrefix+m.o.Name+"_") {
		tok := string(resp.Data)
		m.token.Store(&tok)
		return
	}
	if err == nil {
		err = errors.New(string(resp.Data))
	}
	m.setErr(fmt.Errorf("the hub gave this host no credential of its own (%v); it keeps the fleet token", err))
}

// ServerURLs are the fleet's servers this member knows: those it was
// given and those the cluster announced.
func (m *Member) ServerURLs() []string { return m.nc.Servers() }

// Token is the credential the member connects with: its own once the hub
// gave it one (to keep in the config in place of the fleet token).
func (m *Member) Token() string {
	if p := m.token.Load(); p != nil {
		return *p
	}
	return m.o.Token
}

func (m *Member) serveEnroll(msg *nats.Msg) {
	host, unenroll := strings.CutPrefix(msg.Subject, subjUnenroll)
	if !unenroll {
		host = strings.TrimPrefix(msg.Subject, subjEnroll)
	}
	if CheckName(host) != nil {
		m.badIn.Add(1)
		return
	}
	if unenroll {
		// Answer first: forgetting the credential disconnects the host.
		_ = msg.Respond([]byte("ok"))
		_ = m.nc.Flush()
		if err := m.o.Unenroll(host); err == nil {
			m.o.Logf("fleet: host %s left; its credential is forgotten", host)
		}
		return
	}
	tok, err := m.o.Enroll(host)
	if err != nil {
		_ = msg.Respond([]byte(err.Error()))
		return
	}
	m.o.Logf("fleet: host %s joined with the fleet token; it now has its own credential", host)
	_ = msg.Respond([]byte(tok))
}

// credsOption reads a credentials file: a NATS .creds file (a user JWT
// and its nkey seed, for a server in operator mode) or a bare nkey seed
// (a server whose users are nkeys, without JWTs).
func credsOption(path string) (nats.Option, error) {
	b, err := safefile.Read(path, safefile.StateMax)
	if err != nil {
		return nil, fmt.Errorf("the credentials file: %w", err)
	}
	if _, err := nkeys.ParseDecoratedNKey(b); err != nil {
		return nil, fmt.Errorf("the credentials file %s holds no nkey seed (%v); give a NATS .creds file or an nkey seed file", path, err)
	}
	if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
		return nats.UserCredentials(path), nil
	}
	return nats.NkeyOptionFromSeed(path)
}
