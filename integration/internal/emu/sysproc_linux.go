package emu

import "syscall"

// sysProcAttr puts the emulator in its own process group, so Stop can signal
// everything it spawned and a Ctrl-C in the terminal (sent to the foreground
// group) reaches our runner first instead of killing the JVM behind its back.
// Pdeathsig kills the JVM if the Go process dies without running Stop (e.g.
// `go test -timeout` panics, kill -9); it is Linux only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
