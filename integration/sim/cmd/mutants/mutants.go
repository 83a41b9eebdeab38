package main

// mutant is a deliberate bug: in file (from the repository's root), old
// (which must occur exactly once) becomes new.
type mutant struct {
	name      string
	file      string
	old, new_ string
}

// mutants are the bugs the simulator must catch, each alone. Every one of
// them once was, or easily could be, a line of the library.
var mutants = []mutant{
	{
		name: "dynamostore: complete without the lease token in its condition",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "upd = s.setResult(upd, shape.result)\n\treturn expression.NewBuilder().WithCondition(s.fencing())",
		new_: "upd = s.setResult(upd, shape.result)\n\treturn expression.NewBuilder().WithCondition(name(s.names.PartitionKey).AttributeExists())",
	},
	{
		name: "dynamostore: release without the lease token in its condition",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "upd = setOrRemove(upd, n.LastError, slotLastError, shape.reason)\n\treturn expression.NewBuilder().WithCondition(s.fencing())",
		new_: "upd = setOrRemove(upd, n.LastError, slotLastError, shape.reason)\n\treturn expression.NewBuilder().WithCondition(name(s.names.PartitionKey).AttributeExists())",
	},
	{
		name: "dynamostore: a lease compared with <= instead of <",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "name(n.LeaseUntil).LessThan(slotNowMillis.marker())",
		new_: "name(n.LeaseUntil).LessThanEqual(slotNowMillis.marker())",
	},
	{
		name: "dynamostore: a receipt taken in its last second (expiresAt <= now)",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "name(n.TTL).LessThan(slotNowSeconds.marker())",
		new_: "name(n.TTL).LessThanEqual(slotNowSeconds.marker())",
	},
	{
		name: "dynamostore: attribute names read as document paths (a name with a dot fails every request)",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "func name(n string) expression.NameBuilder { return expression.NameNoDotSplit(n) }",
		new_: "func name(n string) expression.NameBuilder { return expression.Name(n) }",
	},
	{
		name: "dynamostore: a transactional receipt written over any record",
		file: "pkg/idem/dynamostore/tx.go",
		old:  "cond := name(n.PartitionKey).AttributeNotExists()",
		new_: "cond := expression.Or(name(n.PartitionKey).AttributeNotExists(), name(n.PartitionKey).AttributeExists())",
	},
	{
		name: "redisstore: a late receipt written without fencing",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "const completeLua = `#!lua flags=allow-oom\nlocal key = KEYS[1]\nif redis.call('HGET', key, 'lease') ~= ARGV[1] then",
		new_: "const completeLua = `#!lua flags=allow-oom\nlocal key = KEYS[1]\nif redis.call('EXISTS', key) == 0 then",
	},
	{
		name: "redisstore: an acquire that takes a lease when the server is out of memory (no shebang)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "const acquireLua = `#!lua\n",
		new_: "const acquireLua = `\n",
	},
	{
		name: "redisstore: a receipt refused when the server is out of memory (no allow-oom)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "const completeLua = `#!lua flags=allow-oom\n",
		new_: "const completeLua = `#!lua\n",
	},
	{
		name: "idem: a cache that ignores expiry",
		file: "pkg/idem/cache.go",
		old:  "if !now.Before(it.entry.expires()) {",
		new_: "if false {",
	},
	{
		name: "idem: an own write read as someone else's",
		file: "pkg/idem/guard.go",
		old:  "if !acquired && rec.Status == StatusInProgress && rec.Lease == token {",
		new_: "if false && rec.Lease == token {",
	},
	{
		name: "idem: a fingerprint never compared",
		file: "pkg/idem/guard.go",
		old:  `if rec.Fingerprint != "" && fp != "" && rec.Fingerprint != fp {`,
		new_: `if false && rec.Fingerprint != fp {`,
	},
	{
		name: "idem: the receipt write ends with the lease (the old rule)",
		file: "pkg/idem/lease.go",
		old:  "return context.WithDeadline(base, d)",
		new_: "if d.After(leaseUntil) {\n\t\t\td = leaseUntil\n\t\t}\n\t\treturn context.WithDeadline(base, d)",
	},
	{
		name: "idem: a receipt not written is forgotten (no owed receipt)",
		file: "pkg/idem/receipt.go",
		old:  "g.pending.put(skey, r.owned())",
		new_: "_ = r.owned()",
	},
	{
		name: "sqsbatch: two copies of one key run at once",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "case keys[i].err != nil:",
		new_: "case true:",
	},
	{
		name: "sqsbatch: a copy reported requeued although its send failed",
		file: "pkg/idem/sqsbatch/requeue.go",
		old:  `why = "sending it failed: " + err.Error()`,
		new_: `_ = err`,
	},
	{
		name: "sqsbatch: a failed record deleted on its last receive",
		file: "pkg/idem/sqsbatch/lastdelete.go",
		old:  "if h.opts.deleter == nil || r.Failed ||",
		new_: "if h.opts.deleter == nil ||",
	},
}
