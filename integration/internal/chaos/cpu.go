package chaos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux this runs on.
const clockTicks = 100

// CPU returns the CPU time (user + system, seconds) pid has used, and the
// time of its children that have been reaped; zeros where /proc is missing.
func CPU(pid int) (own, children float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The fields after the parenthesised command name: state is field 3,
	// utime 14, stime 15, cutime 16, cstime 17.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0
	}
	n := func(k int) float64 { v, _ := strconv.ParseFloat(f[k], 64); return v / clockTicks }
	return n(11) + n(12), n(13) + n(14)
}

// CPUOf sums the CPU time of pids.
func CPUOf(pids ...int) float64 {
	t := 0.0
	for _, p := range pids {
		if p > 0 {
			own, _ := CPU(p)
			t += own
		}
	}
	return t
}
