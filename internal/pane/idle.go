package pane

import "time"

// DefaultCompactAfter is how long a pane's program is quiet before its
// screen is packed (term.Terminal.Compact): an agent's screen in a few
// hundred bytes instead of up to 30 KB of cells. The next output unpacks
// it.
const DefaultCompactAfter = 5 * time.Second

// compactIdleLocked packs the screen of a pane whose program has written
// nothing for its CompactAfter; of one still drawing, every CompactAfter,
// the rows it has not drawn since the last time (a spinner's pane keeps
// one row of cells). It runs on the sweep (every pane's, on the shared
// clock), so an idle pane needs no timer of its own; a screen already
// packed makes it a check.
func (p *Pane) compactIdleLocked(now time.Time) {
	after := p.cfg.CompactAfter
	if after == 0 {
		after = DefaultCompactAfter
	}
	if p.exited || after < 0 {
		return
	}
	if now.Sub(time.Unix(0, p.outputAt.Load())) >= after {
		if !p.term.Compacted() {
			p.term.Compact()
			// What the packing freed (cells, the history's text) goes
			// back to the system once panes stop going idle.
			trimHeapLater()
		}
		return
	}
	if now.Sub(p.rowsPackedAt) >= after {
		packed := p.term.PackedRows()
		p.term.CompactRows()
		p.rowsPackedAt = now
		if !p.rowsSettled && p.term.PackedRows() > packed {
			// The first rows packed of a screen still drawn free the
			// cells of its first drawing, and what they kept from being
			// given back (term's packRows): back to the system once
			// panes stop settling, as for a pane gone idle. Once a
			// pane: a busy agent's rows are packed every CompactAfter.
			p.rowsSettled = true
			trimHeapLater()
		}
	}
}
