//go:build !sqsidem_faults

package consumer

import "log/slog"

// faults is inert without the build tag sqsidem_faults: the FAULT_*
// variables are not even read, and no message's FaultAttribute is looked
// at (see faultnames.go).
type faults struct{}

func readFaults(*Env) faults { return faults{} }

func (faults) wrap(eff Effect, _ *slog.Logger) Effect { return eff }
