package tmuxctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDrawScreen(t *testing.T) {
	plain := cursor{x: 4, y: 1, visible: true, cols: 10, rows: 3, wrap: true, upper: 0, lower: 2}
	for _, tc := range []struct {
		name string
		rows []string
		c    func(c *cursor)
		want string
	}{
		{"plain", []string{"one", "two"}, nil,
			"\x1b[H\x1b[2J" + // home, clear
				"one\r\ntwo" + // the rows as displayed
				"\x1b[0m" + // no colour left on
				"\x1b[2;5H"}, // the cursor, 1-based
		{"alternate screen, hidden cursor, keypad", []string{"vi"}, func(c *cursor) { c.alternate, c.visible, c.keypadCursor, c.keypad = true, false, true, true },
			"\x1b[?1049h" + // the alternate screen first: the program's exit from it then works
				"\x1b[H\x1b[2Jvi\x1b[0m" +
				"\x1b=" + // DECKPAM
				"\x1b[?1h" + // DECCKM
				"\x1b[2;5H" +
				"\x1b[?25l"}, // cursor hidden
		{"more rows than the pane", []string{"a", "b", "c", "d"}, nil, "\x1b[H\x1b[2Ja\r\nb\r\nc\x1b[0m\x1b[2;5H"},
		{"no rows", nil, nil, "\x1b[H\x1b[2J\x1b[0m\x1b[2;5H"},
		{"colours carried across rows", []string{"\x1b[44mblue", "still"}, nil, "\x1b[H\x1b[2J\x1b[44mblue\r\nstill\x1b[0m\x1b[2;5H"},
		{"scroll region, origin mode", []string{"x"}, func(c *cursor) { c.upper, c.lower, c.origin = 1, 2, true },
			"\x1b[H\x1b[2Jx\x1b[0m" +
				"\x1b[2;3r" + // DECSTBM before the cursor: it homes the cursor
				"\x1b[?6h" + // DECOM
				"\x1b[1;5H"}, // row 2 is the region's first
		{"modes", nil, func(c *cursor) { c.wrap, c.insert, c.mouseButton, c.mouseSGR = false, true, true, true },
			"\x1b[H\x1b[2J\x1b[0m\x1b[?7l\x1b[4h\x1b[?1002h\x1b[?1006h\x1b[2;5H"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := plain
			if tc.c != nil {
				tc.c(&c)
			}
			var rows [][]byte
			for _, r := range tc.rows {
				rows = append(rows, []byte(r))
			}
			if got := string(drawScreen(rows, c)); got != tc.want {
				t.Errorf("drawScreen:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseCursor(t *testing.T) {
	c, err := parseCursor("3 4 1 0 1 80 24 0 1 1 0 0 23 1 0 0 1 0")
	if err != nil {
		t.Fatal(err)
	}
	want := cursor{x: 3, y: 4, alternate: true, keypadCursor: true, cols: 80, rows: 24, insert: true, wrap: true, lower: 23, mouseStandard: true, mouseSGR: true}
	if c != want {
		t.Errorf("parseCursor = %+v; want %+v", c, want)
	}
	for _, bad := range []string{"", "1 2 3", strings.Repeat("x ", 18), "0 0 0 0 0 0 24 0 0 0 0 0 0 0 0 0 0 0", "-1 0 0 0 0 80 24 0 0 0 0 0 0 0 0 0 0 0"} {
		if _, err := parseCursor(bad); err == nil {
			t.Errorf("parseCursor(%q): no error", bad)
		}
	}
}

func TestParsePane(t *testing.T) {
	line := "%3\x1f$1\x1fwork\x1f2\x1f1\x1f120\x1f40\x1f4242\x1f0\x1f/dev/pts/7\x1fclaude\x1f/home/u/a\x1fb"
	p, dead, ok := parsePane([]byte(line))
	want := Pane{ID: "%3", SessionID: "$1", Session: "work", Window: 2, Index: 1, Target: "work:2.1",
		Cols: 120, Rows: 40, PID: 4242, Command: "claude", Path: "/home/u/a\x1fb", TTY: "/dev/pts/7"}
	if !ok || dead || p != want {
		t.Errorf("parsePane = %+v, %v, %v; want %+v", p, dead, ok, want)
	}
	if _, dead, _ := parsePane([]byte(strings.Replace(line, "\x1f0\x1f", "\x1f1\x1f", 1))); !dead {
		t.Error("pane_dead 1 is not dead")
	}
	for _, bad := range []string{"", "%3", strings.Replace(line, "%3", "3", 1), strings.Replace(line, "120", "wide", 1)} {
		if _, _, ok := parsePane([]byte(bad)); ok {
			t.Errorf("parsePane(%q) ok", bad)
		}
	}
}

func TestServer(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", dir)
	for _, tc := range []struct {
		srv        Server
		args       []string
		str, sock  string
		shouldFail bool
	}{
		{Server{}, nil, "default", dir + "/tmux-UID/default", false},
		{Server{Name: "work"}, []string{"-L", "work"}, "-L work", dir + "/tmux-UID/work", false},
		{Server{Socket: "/x/s"}, []string{"-S", "/x/s"}, "-S /x/s", "/x/s", false},
		{Server{Name: "a", Socket: "/x/s"}, nil, "", "", true},
		{Server{Name: "a/b"}, nil, "", "", true},
	} {
		got, err := tc.srv.SocketPath()
		if tc.shouldFail {
			if err == nil {
				t.Errorf("%+v: SocketPath did not fail", tc.srv)
			}
			continue
		}
		want := strings.Replace(tc.sock, "UID", strconv.Itoa(os.Getuid()), 1)
		if err != nil || got != want {
			t.Errorf("%+v: SocketPath = %q, %v; want %q", tc.srv, got, err, want)
		}
		if s := tc.srv.String(); s != tc.str {
			t.Errorf("%+v: String = %q; want %q", tc.srv, s, tc.str)
		}
		if a := tc.srv.Args(); strings.Join(a, " ") != strings.Join(tc.args, " ") {
			t.Errorf("%+v: Args = %q; want %q", tc.srv, a, tc.args)
		}
	}
}

// A $TMUX_TMPDIR that does not exist is passed over, as tmux does.
func TestSocketPathFallback(t *testing.T) {
	t.Setenv("TMUX_TMPDIR", "/nonexistent/tmux-tmpdir")
	tmp, err := filepath.EvalSymlinks("/tmp")
	if err != nil {
		t.Skip("no /tmp")
	}
	got, err := Server{Name: "x"}.SocketPath()
	if want := filepath.Join(tmp, "tmux-"+strconv.Itoa(os.Getuid()), "x"); err != nil || got != want {
		t.Errorf("SocketPath = %q, %v; want %q", got, err, want)
	}
}

func TestParseSessions(t *testing.T) {
	server, ids, bad := parseSessions([][]byte{
		b("100.1700000000 1700000300 $0"),
		b("100.1700000000 1700000100 $3"),
		b("garbage"),
		b("100.1700000000 1700000300 $1"),
		b("100.1700000000 x $2"),
	})
	if server != "100.1700000000" || strings.Join(ids, " ") != "$3 $0 $1" || bad != 2 {
		t.Errorf("parseSessions = %q, %q, %d bad; want the least recently active first, 2 bad", server, ids, bad)
	}
}
