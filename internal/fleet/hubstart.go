package fleet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startLog is a hub's NATS server's logger. The server logs a failed
// start (a port another process holds, a store it cannot open) as fatal
// and then goes on waiting; startLog keeps the first such line, so the hub
// says why at once rather than after HubStartWait. Lines go on to the
// embedded logger (CORRAL_FLEET_DEBUG's, or quietLog), a fatal one as an
// error: the standard logger's Fatalf would end the daemon.
type startLog struct {
	server.Logger
	fatal chan string // the first fatal line
}

func newStartLog(next server.Logger) *startLog {
	if next == nil {
		next = quietLog{}
	}
	return &startLog{Logger: next, fatal: make(chan string, 1)}
}

func (l *startLog) Fatalf(format string, v ...any) {
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
	l.Logger.Errorf(format, v...)
}

// quietLog writes nothing.
type quietLog struct{}

func (quietLog) Noticef(string, ...any) {}
func (quietLog) Warnf(string, ...any)   {}
func (quietLog) Fatalf(string, ...any)  {}
func (quietLog) Errorf(string, ...any)  {}
func (quietLog) Debugf(string, ...any)  {}
func (quietLog) Tracef(string, ...any)  {}

// waitListening waits for srv, started, to listen on every port it
// serves (its members' and its cluster's), at most wait: a fatal line of
// its start ends the wait at once, with that line.
func waitListening(srv *server.Server, log *startLog, listen string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for !srv.ReadyForConnections(50 * time.Millisecond) {
		select {
		case line := <-log.fatal:
			return fmt.Errorf("fleet hub: the NATS server could not start: %s (another hub or program may hold the port: end it, or choose another with --listen or --cluster-listen)", line)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fleet hub: the NATS server did not start listening on %s within %v (is the port taken? the machine or its disk overloaded?)", listen, wait)
		}
	}
	return nil
}
