//go:build unix && !linux

package emu

import "syscall"

// sysProcAttr puts the emulator in its own process group so Stop can signal
// everything it spawned. Without Linux's Pdeathsig, an emulator outlives a Go
// process that dies without calling Stop; kill it by the pid in its log name.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
