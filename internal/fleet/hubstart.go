package fleet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startLog is a hub's NATS server's logger. The server logs a failed
// start (a port another process holds, a store it cannot open) as fatal
// and then goes on waiting; startLog keeps the first such line, so the hub
// says why at once rather than after HubStartWait. Lines go on to next
// (CORRAL_FLEET_DEBUG's logger), a fatal one as an error: the standard
// logger's Fatalf would end the daemon.
type startLog struct {
	next  server.Logger // nil: nothing is written
	fatal chan string   // the first fatal line
}

func newStartLog(next server.Logger) *startLog {
	return &startLog{next: next, fatal: make(chan string, 1)}
}

func (l *startLog) Fatalf(format string, v ...any) {
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *startLog) Noticef(format string, v ...any) {
	if l.next != nil {
		l.next.Noticef(format, v...)
	}
}

func (l *startLog) Warnf(format string, v ...any) {
	if l.next != nil {
		l.next.Warnf(format, v...)
	}
}

func (l *startLog) Errorf(format string, v ...any) {
	if l.next != nil {
		l.next.Errorf(format, v...)
	}
}

func (l *startLog) Debugf(format string, v ...any) {
	if l.next != nil {
		l.next.Debugf(format, v...)
	}
}

func (l *startLog) Tracef(format string, v ...any) {
	if l.next != nil {
		l.next.Tracef(format, v...)
	}
}

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
