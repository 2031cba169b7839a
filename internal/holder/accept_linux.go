package holder

import "golang.org/x/sys/unix"

// acceptRaw accepts a connection on a non-blocking listening socket:
// non-blocking and close-on-exec (a program started meanwhile must not
// inherit it).
func acceptRaw(fd int) (int, error) {
	nfd, _, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	return nfd, err
}
