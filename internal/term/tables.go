package term

// The tables cells and pens index into: styles, hyperlinks and grapheme
// clusters, each compacted from what is still used when it is full.

// pen returns the style index of the cursor's pen.
func (e *emulator) pen() uint16 {
	if !e.penOK {
		e.penIdx = e.lookup(e.scr.cur.pen)
		e.penOK = true
		e.blankOK = false
	}
	return e.penIdx
}

// blank is the cell erases leave: empty, with the pen's background.
func (e *emulator) blank() cell {
	if !e.penOK || !e.blankOK {
		e.pen()
		e.blankIdx = e.lookup(style{bg: e.scr.cur.pen.bg})
		e.blankOK = true
	}
	return cell{r: ' ', st: e.blankIdx, w: 1}
}

type styleSlot struct {
	st  style
	idx uint16
	ok  bool
}

// clearStyleCache forgets the cached indices (a compaction renumbered
// them); a packed emulator has no cache to clear.
func (e *emulator) clearStyleCache() {
	if e.styleCache != nil {
		*e.styleCache = [32]styleSlot{}
	}
}

// lookup interns a style through a small direct-mapped cache: programs
// switch among a handful of colours, and the map costs a hash of the
// whole style.
func (e *emulator) lookup(st style) uint16 {
	h := ((uint64(st.fg) ^ uint64(st.bg)*0xc2b2ae3d27d4eb4f ^ uint64(st.ul)*0x165667b19e3779f9 ^
		uint64(st.attrs)<<40 ^ uint64(st.under)<<48 ^ uint64(st.link)<<52) * 0x9e3779b97f4a7c15) >> 59
	if st == (style{}) {
		return 0 // the table's first entry, always
	}
	if e.styleCache == nil {
		e.styleCache = new([32]styleSlot)
	}
	sl := &e.styleCache[h]
	if sl.ok && sl.st == st {
		return sl.idx
	}
	i := e.intern(st)
	e.styleCache[h] = styleSlot{st: st, idx: i, ok: true}
	return i
}

func (e *emulator) intern(st style) uint16 {
	if i, ok := e.styleIndex()[st]; ok {
		return i
	}
	if len(e.styles) >= e.tableLimit() {
		e.compactStyles()
		if len(e.styles) >= e.tableLimit() {
			return 0
		}
	}
	i := uint16(len(e.styles))
	e.styles = append(e.styles, st)
	e.styleIdx[st] = i
	return i
}

// compactStyles rebuilds the style table from what the cells use; a
// program printing a new colour per cell cannot grow it past the screen.
// Pens hold styles, not indices, so only cells are rewritten.
func (e *emulator) compactStyles() {
	e.unpackRows()
	styles := []style{{}}
	idx := map[style]uint16{{}: 0}
	for _, s := range []*screen{&e.main, &e.alt} {
		for _, l := range s.lines {
			for x := range l {
				c := &l[x]
				if c.st == 0 {
					continue
				}
				st := e.styles[c.st]
				i, ok := idx[st]
				if !ok {
					i = uint16(len(styles))
					styles = append(styles, st)
					idx[st] = i
				}
				c.st = i
			}
		}
	}
	e.styles, e.styleIdx = styles, idx
	e.clearStyleCache()
	e.penOK = false
}

// compactLinks rebuilds the link table from the links that styles used by
// cells, and the pens, still refer to. Style entries are rewritten in
// place, so cells keep their style indices.
func (e *emulator) compactLinks() {
	e.unpackRows()
	used := make([]bool, len(e.links))
	for _, s := range []*screen{&e.main, &e.alt} {
		used[s.cur.pen.link] = true
		used[s.saved.pen.link] = true
		for _, l := range s.lines {
			for _, c := range l {
				if int(c.st) < len(e.styles) {
					used[e.styles[c.st].link] = true
				}
			}
		}
	}
	remap := make([]uint16, len(e.links))
	links := []link{{}}
	idx := map[link]uint16{{}: 0}
	for i, l := range e.links {
		if i == 0 || !used[i] {
			continue
		}
		remap[i] = uint16(len(links))
		idx[l] = remap[i]
		links = append(links, l)
	}
	for i := range e.styles {
		e.styles[i].link = remap[e.styles[i].link]
	}
	e.styleIdx = make(map[style]uint16, len(e.styles))
	for i := len(e.styles) - 1; i >= 0; i-- {
		e.styleIdx[e.styles[i]] = uint16(i)
	}
	for _, s := range []*screen{&e.main, &e.alt} {
		s.cur.pen.link = remap[s.cur.pen.link]
		s.saved.pen.link = remap[s.saved.pen.link]
	}
	e.links, e.linkIdx = links, idx
	e.clearStyleCache()
	e.penOK = false
}

// compactClusters does the same for the grapheme cluster table.
func (e *emulator) compactClusters() {
	e.unpackRows()
	var clusters []string
	idx := map[string]int32{}
	for _, s := range []*screen{&e.main, &e.alt} {
		for _, l := range s.lines {
			for x := range l {
				c := &l[x]
				if c.r < clusterBase {
					continue
				}
				str := e.clusters[c.r-clusterBase]
				i, ok := idx[str]
				if !ok {
					i = int32(len(clusters))
					clusters = append(clusters, str)
					idx[str] = i
				}
				c.r = clusterBase + i
			}
		}
	}
	e.clusters, e.clusterIdx = clusters, idx
}
