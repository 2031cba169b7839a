// Package panestore keeps the pane table: what the daemon knows of every
// pane whose program runs under a holder, so that the next daemon adopts
// them again (after an upgrade, a crash or a hand-over) and, once their
// holders are gone (a reboot), corral restore starts them again.
//
// It owns the table's file and journal, the rows of the lost panes, the
// loop that writes changed rows, and what adoption and restore decide from
// a row alone: whether its program still runs, whether its holder is
// alive, the connection to its holder, the holder sockets nobody knows
// (EndStrays), letting a lost pane go (LetGo), and the resumed command
// (ResumeArgv), and the row of each live held pane (Held). The server owns
// the panes themselves: it turns a holder's connection into a pane,
// registers it, and gives the store the live rows through the rows
// function passed to New.
//
// Locks (none is held while another of them is taken):
//
//   - Store.mu guards the lost rows and the ids asked to be written soon.
//     It is never held while calling the rows function or writing a file.
//
//   - Store.wmu orders the writes of the table and its journal, and guards
//     a hash of each row as last written and the files' sizes. Rows are built
//     outside both (the rows function runs before either is taken).
//
//   - Held.mu guards one live pane's row (its sessions, noted by hook
//     reports while the loop reads the row). It is taken alone: Live
//     reads the pane's snapshot (which never waits) and then the row.
//
// The rows function is the server's: it takes the server's own locks and
// each pane's snapshot, never the store's.
package panestore
