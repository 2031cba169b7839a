// Package paneset is the daemon's panes on this host: the table of live
// panes (and, beside them in one space of ids and names, the server's
// headless jobs, which it keeps but does not run), starting a pane into a
// holder, the pane table's rows (panestore) and the rows changed since
// the table's loop last asked, adopting the held panes of the table when
// a daemon starts, restoring lost panes, the pane side of a hand-over,
// ending the panes at shutdown, and the watched tmux servers, whose panes
// are the set's too.
//
// The server gives it what it needs through Options: the rules in force,
// where each change of state goes (the event log, notifications, the
// approval policy), what the server keeps beside an entry (Entry.Ext: its
// policy, its worktree) and how an adopted or restored pane gets it back
// from its row. It has no package-level state.
//
// Locks: Set.mu guards the pane map, the job map and the roster (the ids
// and names of both, the start order, the reservations of starts in
// flight) and the shutdown's flags (closing, collected). It is never held
// while calling into a pane (but for its lock-free reads, such as
// Generation), a job, the pane table or a function of Options; the
// server's own lock is never held with it. The tmux watches' mu guards
// the watched servers; it is never held while a watch starts or closes
// (those run tmux), and it may take Set.mu (never the other way). The pane
// table's rows function (tableRows) takes Set.mu and no store lock; a row is built from the pane's snapshot and its Held, whose
// own lock is taken alone.
package paneset
