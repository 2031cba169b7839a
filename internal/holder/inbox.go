package holder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/rawio"
)

// inboxSize is the buffer a held pane uses for the holder's frames while
// there are frames to read. A frame larger than it gets a buffer of its
// own size, dropped once read.
const inboxSize = 4 << 10

// inboxBufs lend inboxes their buffers: a pane whose holder says nothing
// (nearly always: its output goes through the shared ring, not frames)
// holds none.
var inboxBufs = sync.Pool{New: func() any { return new([inboxSize]byte) }}

// inbox gathers what a holder sends and cuts it into messages.
type inbox struct {
	buf  []byte
	r, w int // buf[r:w] is read and not yet handed out
}

// room returns where the next read goes: the free end of the buffer, with
// space for all of the frame being read.
func (in *inbox) room() []byte {
	if in.r == in.w {
		in.r, in.w = 0, 0
		if len(in.buf) != inboxSize {
			in.buf = inboxBufs.Get().(*[inboxSize]byte)[:]
		}
	}
	need := inboxSize
	if in.w-in.r >= 5 {
		if size := int(binary.BigEndian.Uint32(in.buf[in.r+1:])); size <= MaxFrame && 5+size > need {
			need = 5 + size
		}
	}
	if len(in.buf)-in.r < need {
		if need > len(in.buf) {
			b := make([]byte, need)
			copy(b, in.buf[in.r:in.w])
			in.buf = b
		} else {
			copy(in.buf, in.buf[in.r:in.w])
		}
		in.w -= in.r
		in.r = 0
	}
	return in.buf[in.w:]
}

// next returns the next whole message read, skipping frames of unknown
// types; ok is false when none is whole yet. An Output is valid until the
// next call of room.
func (in *inbox) next() (m Msg, ok bool, err error) {
	for in.w-in.r >= 5 {
		typ := in.buf[in.r]
		size := int(binary.BigEndian.Uint32(in.buf[in.r+1:]))
		if size > MaxFrame {
			return Msg{}, false, fmt.Errorf("%w: type %q of %d bytes, the limit is %d", ErrFrame, typ, size, MaxFrame)
		}
		if in.w-in.r < 5+size {
			break
		}
		b := in.buf[in.r+5 : in.r+5+size : in.r+5+size]
		in.r += 5 + size
		switch typ {
		case tOutput:
			return Msg{Output: b}, true, nil
		case tLive:
			return Msg{Live: true}, true, nil
		case tExit:
			var e exitMsg
			if err := json.Unmarshal(b, &e); err != nil {
				return Msg{}, false, fmt.Errorf("%w: exit: %v", ErrFrame, err)
			}
			return Msg{Exit: true, Code: e.Code}, true, nil
		case tError:
			return Msg{}, false, fmt.Errorf("the holder said: %s", clip(string(b)))
		}
	}
	return Msg{}, false, nil
}

// idle gives the buffer back once everything read has been handed out:
// the Outputs handed out are no longer valid (see Run).
func (in *inbox) idle() {
	if in.r != in.w {
		return
	}
	if len(in.buf) == inboxSize {
		inboxBufs.Put((*[inboxSize]byte)(in.buf))
	}
	in.buf, in.r, in.w = nil, 0, 0
}

// end is the error of a connection closed by the holder.
func (in *inbox) end() error {
	if in.w > in.r {
		return io.ErrUnexpectedEOF // in the middle of a frame
	}
	return io.EOF
}

// deliver hands got every whole message read; stop is true when got
// asked for no more.
func (in *inbox) deliver(got func(Msg) bool) (stop bool, err error) {
	for {
		m, ok, err := in.next()
		if err != nil || !ok {
			return false, err
		}
		if !got(m) {
			return true, nil
		}
	}
}

// Run hands got what the holder says, in order, until got returns false
// (Run returns nil) or the connection ends (io.EOF when the holder closed
// it between frames) or a frame is malformed. A frame of an unknown type
// is skipped. An Output is valid only until got returns.
//
// It reads with raw system calls until the socket is empty (EAGAIN), then
// waits for the poller. Reading until EAGAIN is required, not a habit:
// the poller folds an edge that comes while its goroutine is being woken
// into the wake-up, so after a read that returned the holder's last
// output, the edge of its hang-up may be gone.
func (c *Conn) Run(got func(Msg) bool) error {
	if stop, err := c.in.deliver(got); stop || err != nil {
		return err
	}
	var stop bool
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			room := c.in.room()
			n, err := rawio.Read(fd, room)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				c.in.idle() // before the wait, which may be long
				return false
			case err != nil:
				rerr = err
				return true
			case n == 0:
				rerr = c.in.end()
				return true
			}
			c.in.w += n
			if stop, rerr = c.in.deliver(got); stop || rerr != nil {
				return true
			}
		}
	})
	if stop {
		return nil
	}
	if err != nil {
		return err
	}
	return rerr
}

// Next reads what the holder says next (see Run). Its Output is valid
// until the next call.
func (c *Conn) Next() (Msg, error) {
	var m Msg
	err := c.Run(func(got Msg) bool {
		m = got
		return false
	})
	return m, err
}
