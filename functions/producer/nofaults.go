//go:build !sqsidem_faults

package main

import "github.com/exactlyonce/sqsidem/pkg/idem"

// faults is inert without the build tag sqsidem_faults (what is deployed):
// the FAULT_* variables are not read.
type faults struct{}

func loadFaults(func(string) string) (faults, error) { return faults{}, nil }

func (faults) wrap(store idem.Store, client SQS) (idem.Store, SQS) { return store, client }
