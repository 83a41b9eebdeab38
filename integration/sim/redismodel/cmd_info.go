package redismodel

import (
	"strconv"
	"strings"
)

// Version is the Redis version the model follows and reports.
const Version = "7.0.15"

// info is INFO with the few lines a client may check: the version, the
// memory policy and whether AOF is on. A section named that the model does
// not know gives an empty string, as a section unknown to Redis does.
func info(s *Server, args []string) any {
	sections := []struct{ name, body string }{
		{"server", "redis_version:" + Version + "\r\nredis_mode:standalone\r\n"},
		{"memory", "maxmemory:" + strconv.Itoa(s.maxmemory()) + "\r\nmaxmemory_policy:" + s.policy + "\r\n"},
		{"persistence", "loading:0\r\naof_enabled:" + strconv.Itoa(boolInt(s.aof)) + "\r\n"},
	}
	want := map[string]bool{}
	for _, a := range args {
		want[strings.ToLower(a)] = true
	}
	all := len(args) == 0 || want["default"] || want["all"] || want["everything"]
	var b strings.Builder
	for _, sec := range sections {
		if !all && !want[sec.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.name[:1]) + sec.name[1:] + "\r\n" + sec.body)
	}
	return b.String()
}

// maxmemory is what INFO reports: the model does not count memory, so under
// OOM it reports the smallest limit, which any server is above.
func (s *Server) maxmemory() int {
	return boolInt(s.oom)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
