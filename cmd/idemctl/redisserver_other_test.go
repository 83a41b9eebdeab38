//go:build !linux

package main

import "syscall"

// sysProcAttr: only Linux kills a child when its parent dies; elsewhere the
// tests' cleanups end the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
