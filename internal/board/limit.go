package board

import (
	"net"
	"sync"
	"time"
)

// Bounds on the board's connections: they cost the daemon descriptors,
// which its own socket (every CLI command) needs too. A peer past its
// share, or anyone past the total, is closed at once.
const (
	MaxConns        = 256
	MaxConnsPerPeer = 128
	// IdleTimeout ends a kept-alive connection that sends nothing.
	IdleTimeout = 60 * time.Second
	// HeaderTimeout bounds the wait for a request's headers.
	HeaderTimeout = 5 * time.Second
)

// limitListener caps the connections it hands out, in total and per
// remote address.
type limitListener struct {
	net.Listener
	total, perPeer int

	mu      sync.Mutex // guards the fields that follow
	open    int
	byPeer  map[string]int
	refused int64
}

func newLimitListener(ln net.Listener, total, perPeer int) *limitListener {
	return &limitListener{Listener: ln, total: total, perPeer: perPeer, byPeer: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		l.mu.Lock()
		if l.open >= l.total || l.byPeer[peer] >= l.perPeer {
			l.refused++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open++
		l.byPeer[peer]++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, peer: peer}, nil
	}
}

// Refused counts the connections closed for being over a cap.
func (l *limitListener) Refused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

type limitConn struct {
	net.Conn
	l    *limitListener
	peer string
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.byPeer[c.peer]--; c.l.byPeer[c.peer] <= 0 {
			delete(c.l.byPeer, c.peer)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Unwrap gives the connection under the cap (for a TCP connection's own
// methods).
func (c *limitConn) Unwrap() net.Conn { return c.Conn }
