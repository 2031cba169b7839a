package term

// OSC sequences (ESC ]): titles, status reports, notifications, shell
// marks, colour queries and hyperlinks.

// osc runs OSC sequence cmd with its data.
func (e *emulator) osc(cmd int, data []byte) {
	e.flush()
	t := e.t
	switch cmd {
	case 7501:
		body := oscBody(data)
		// ESC ] + data + at least a one-byte terminator.
		if 2+len(data)+1 > MaxStatusSequence {
			t.emit(Event{Kind: EventStatus, Oversize: true})
			return
		}
		if body == StatusQuery {
			t.flushStatusQueryLocked()
			t.statusQueryPending = true
			return
		}
		t.emit(Event{Kind: EventStatus, Text: body})
	case 0, 2:
		t.title = clipText(oscBody(data), MaxTitle)
		t.emit(Event{Kind: EventTitle, Text: t.title})
	case 9:
		t.tapNotify9(oscBody(data))
	case 777:
		t.tapNotify777(oscBody(data))
	case 99:
		_, payload, _ := cutString(oscBody(data), ";")
		t.emit(Event{Kind: EventNotify, NotifySource: "99", Text: clipText(payload, MaxNotifyText)})
	case 133:
		t.tapPromptMark(oscBody(data))
	case 10, 11, 12:
		if oscBody(data) == "?" {
			t.reply("\x1b]" + itoa(cmd) + ";" + defaultColour(cmd) + "\x1b\\")
		}
	case 8:
		e.hyperlink(data)
	}
}

// hyperlink is OSC 8 ; params ; url: the link is part of the pen.
func (e *emulator) hyperlink(data []byte) {
	var parts [3][]byte
	n := 0
	start := 0
	for i, b := range data {
		if b == ';' {
			if n == 2 {
				return // more than three parts
			}
			parts[n] = data[start:i]
			n++
			start = i + 1
		}
	}
	if n != 2 {
		return
	}
	parts[2] = data[start:]
	if len(parts[1])+len(parts[2]) > maxLinkLen {
		return
	}
	l := link{url: string(parts[2]), params: string(parts[1])}
	i, ok := e.linkIndex()[l]
	if !ok {
		if len(e.links) >= maxLinks {
			e.compactLinks()
		}
		if len(e.links) >= maxLinks {
			return
		}
		i = uint16(len(e.links))
		e.links = append(e.links, l)
		e.linkIdx[l] = i
	}
	e.scr.cur.pen.link = i
	e.penOK = false
}

func cutString(s, sep string) (before, after string, found bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}
