//go:build race

package cdktest

// raceEnabled: see Main. jsii-runtime-go v1.140.0's Close calls
// exec.Cmd.Wait while its own watcher goroutine is in Wait too, which the
// race detector reports (and then fails the otherwise passing test binary).
const raceEnabled = true
