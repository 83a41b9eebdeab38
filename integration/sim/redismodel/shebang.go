package redismodel

import "strings"

// scriptFlags are the flags of a script's shebang (Redis 7). A script
// without a shebang runs in compat mode: no flags, and EVAL does not check
// memory before it runs.
type scriptFlags struct {
	shebang  bool
	noWrites bool
	allowOOM bool
}

// refusedOnOOM reports whether EVAL refuses the script, before running or
// even caching it, while used memory is above maxmemory: Redis makes EVAL
// of a shebang script a denyoom command unless the script declares
// allow-oom or no-writes.
func (f scriptFlags) refusedOnOOM() bool {
	return f.shebang && !f.allowOOM && !f.noWrites
}

// parseShebang reads the first line of a script as Redis 7.0's
// evalExtractShebangFlags does, and returns its flags and the body to
// compile: the script without its first line but with that line's newline,
// so that line numbers in errors stay the script's own. Quoted arguments in
// the shebang are not modelled.
func parseShebang(src string) (scriptFlags, string, Error) {
	var f scriptFlags
	if !strings.HasPrefix(src, "#!") {
		return f, src, ""
	}
	line, _, found := strings.Cut(src, "\n")
	if !found {
		return f, "", Error("ERR Invalid script shebang")
	}
	parts := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\v\f", r) })
	if parts[0] != "#!lua" {
		return f, "", errorReply("ERR Unexpected engine in script shebang: " + parts[0])
	}
	f.shebang = true
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return f, "", errorReply("ERR Unknown lua shebang option: " + p)
		}
		if list == "" {
			continue // no flags
		}
		for name := range strings.SplitSeq(list, ",") {
			switch name {
			case "no-writes":
				f.noWrites = true
			case "allow-oom":
				f.allowOOM = true
			case "allow-stale", "no-cluster", "allow-cross-slot-keys":
				// Known to Redis; they change nothing in a single server
				// that is neither a replica nor a cluster.
			default:
				return f, "", errorReply("ERR Unexpected flag in script shebang: " + name)
			}
		}
	}
	return f, src[len(line):], ""
}
