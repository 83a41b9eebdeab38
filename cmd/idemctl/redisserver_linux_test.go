package main

import "syscall"

// sysProcAttr makes the kernel kill redis-server when the test binary dies
// without running its cleanups, so that no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
