package osproc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ParseTpgid reads the foreground process group of a process's
// controlling terminal (tpgid, the 8th field) from a /proc/PID/stat line.
// The command's name, in parentheses, may hold spaces and parentheses:
// the fields start after the last ')'.
func ParseTpgid(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := bytes.Fields(b[i+1:])
	// state ppid pgrp session tty_nr tpgid
	if len(f) < 6 {
		return 0, errors.New("malformed /proc stat")
	}
	n, err := strconv.Atoi(string(f[5]))
	if err != nil {
		return 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return n, nil
}
