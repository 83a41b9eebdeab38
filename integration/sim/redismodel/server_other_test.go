//go:build !linux

package redismodel_test

import "syscall"

// sysProcAttr: only Linux can tie the server's life to the test binary's;
// elsewhere the cleanups stop it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
