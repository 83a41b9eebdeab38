//go:build linux

package lambdarun

import "syscall"

// procAttr puts an instance in its own process group (kills reach all of
// it) and has Linux kill it if the harness dies without Stop, e.g. on a
// `go test -timeout` panic, so no Lambda process outlives a test run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
