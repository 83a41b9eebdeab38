//go:build !linux

package lambdarun

import "syscall"

// procAttr puts an instance in its own process group. Without Linux's
// Pdeathsig, an instance outlives a harness that dies without Stop.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
