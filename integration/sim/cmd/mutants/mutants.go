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
		old:  "upd = upd.Remove(name(n.TTL))\n\t}\n\treturn expression.NewBuilder().WithCondition(s.fencing())",
		new_: "upd = upd.Remove(name(n.TTL))\n\t}\n\treturn expression.NewBuilder().WithCondition(name(s.names.PartitionKey).AttributeExists())",
	},
	{
		name: "dynamostore: a lease compared with <= instead of <",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "name(n.LeaseUntil).LessThan(slotNowMillis.marker())",
		new_: "name(n.LeaseUntil).LessThanEqual(slotNowMillis.marker())",
	},
	{
		name: "dynamostore: a lease end compared in seconds (a lapsed lease stays in progress)",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "name(n.LeaseUntil).LessThan(slotNowMillis.marker())",
		new_: "name(n.LeaseUntil).LessThan(slotNowSeconds.marker())",
	},
	{
		name: "dynamostore: an own release sent again after a takeover reported lease lost",
		file: "pkg/idem/dynamostore/store.go",
		old:  "case errors.As(err, &ccf) && s.releasedBy(ccf.Item, lease):",
		new_: "case false && errors.As(err, &ccf) && s.releasedBy(ccf.Item, lease):",
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
		name: "redisstore: an own release sent again after a takeover reported lease lost",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "\tif f[2] == ARGV[1] or (f[3] == ARGV[1] and (f[4] == 'FAILED' or f[4] == 'UNKNOWN')) then\n\t\treturn 1\n\tend\n",
		new_: "",
	},
	{
		name: "redisstore: Check silent about replicas without WithWaitReplicas",
		file: "pkg/idem/redisstore/check.go",
		old:  "case s.wait == nil && replicas > 0:",
		new_: "case false && s.wait == nil && replicas > 0:",
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
		old:  "default:\n\t\tg.owed.put(skey, r, g.opts.now())\n\t\tres.Outcome = Unconfirmed",
		new_: "default:\n\t\tres.Outcome = Unconfirmed",
	},
	{
		name: "idem: owed receipts bounded (16: a receipt owed past them is forgotten)",
		file: "pkg/idem/owed.go",
		old:  "\tif o.resultBytes+len(r.completion.Result) > owedResultBudget {",
		new_: "\tif len(o.items) >= 16 {\n\t\treturn\n\t}\n\tif o.resultBytes+len(r.completion.Result) > owedResultBudget {",
	},
	{
		// Sound for one call of a key at a time (the receipt is put back
		// when the write fails); two copies in one process at once — two
		// invocations of a Managed Instances environment — and the second
		// finds nothing owed while the first writes, takes the key over.
		name: "idem: an owed receipt taken out while a copy writes it (a copy in another invocation finds none)",
		file: "pkg/idem/receipt.go",
		old:  "\terr = g.writeReceipt(ctx, skey, &r)\n",
		new_: "\tg.owed.remove(skey, r.token)\n\terr = g.writeReceipt(ctx, skey, &r)\n",
	},
	{
		// The bug shared processes found (seed 1732): an attempt whose
		// receipt write outlived its lease, or a copy's failed write of
		// it, puts its receipt back over the one a later attempt of the
		// same process owes; that one is forgotten, the key taken again.
		name: "idem: an older owed receipt put back over a later attempt's (the later one forgotten)",
		file: "pkg/idem/owed.go",
		old:  "if old.token != r.token && old.attempts > r.attempts && now.Before(old.expires()) {",
		new_: "if false && old.token != r.token && old.attempts > r.attempts && now.Before(old.expires()) {",
	},
	{
		name: "idem: the result cap not applied (a receipt, owed or written, keeps the whole result)",
		file: "pkg/idem/guard.go",
		old:  "if len(value) > g.opts.maxResult {",
		new_: "if false && len(value) > g.opts.maxResult {",
	},
	{
		name: "idem: a cancelled caller reported as a store failure",
		file: "pkg/idem/errortext.go",
		old:  "if cerr := cancelled(ctx); cerr != nil {",
		new_: "if cerr := cancelled(ctx); false && cerr != nil {",
	},
	{
		name: "sqsbatch: two copies of one key run at once",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "case keys[i].err != nil:",
		new_: "case true:",
	},
	{
		name: "sqsbatch: copies of a key in two FIFO groups of a batch run at once (a lock per record)",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "if locks[keys[i].key] == nil {",
		new_: "if true {",
	},
	{
		name: "sqsbatch: a FIFO group goes on after a failure other than the effect's",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "groupFailed, storeFailed = true, r.Outcome == idem.StoreError",
		new_: "groupFailed, storeFailed = r.Outcome == idem.Failed, r.Outcome == idem.StoreError",
	},
	{
		name: "sqsbatch: a record of a FIFO queue requeued (out of its group's order)",
		file: "pkg/idem/sqsbatch/requeue.go",
		old:  "\tif isFIFO(msg) {",
		new_: "\tif false && isFIFO(msg) {",
	},
	{
		name: "sqsbatch: a copy on its last receive skipped after a failed batch-mate",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "if groupFailed && (isFIFO(records[i]) || !h.lastReceive(records[i])) {",
		new_: "if groupFailed {",
	},
	{
		name: "sqsbatch: MessageID ignores the requeued copy's original id",
		file: "pkg/idem/sqsbatch/keys.go",
		old:  "\tid := OriginalMessageID(msg)\n\tif id == \"\" {",
		new_: "\tid := msg.MessageId\n\tif id == \"\" {",
	},
	{
		name: "sqsbatch: a requeued copy without its original message id",
		file: "pkg/idem/sqsbatch/requeue.go",
		old:  "attrs[MessageIDAttribute] = events.SQSMessageAttribute{DataType: \"String\", StringValue: &id}",
		new_: "_ = id",
	},
	{
		name: "sqsbatch: a requeue count read without bounds (a producer's negative count lifts the limit)",
		file: "pkg/idem/sqsbatch/requeue.go",
		old:  "return n, err == nil && n >= 0 && n <= MaxRequeues",
		new_: "return n, err == nil",
	},
	{
		name: "sqsbatch: a tracer's record end called outside recover (its panic kills the process)",
		file: "pkg/idem/sqsbatch/tracer.go",
		old:  "safely(ctx, log, \"the record's end\", func() { tend(r) })",
		new_: "tend(r)",
	},
	{
		name: "sqsbatch: a tracer's batch end called outside recover (the batch response lost)",
		file: "pkg/idem/sqsbatch/tracer.go",
		old:  "safely(ctx, log, \"the batch's end\", func() { tend(resp, err) })",
		new_: "tend(resp, err)",
	},
	{
		name: "sqsbatch: a copy reported requeued although its send failed",
		file: "pkg/idem/sqsbatch/requeue.go",
		old:  `why = "sending it failed: " + err.Error()`,
		new_: `_ = err`,
	},
	{
		name: "sqsbatch: a failed record deleted on its last receive",
		file: "pkg/idem/sqsbatch/delete.go",
		old:  "if h.opts.deleter == nil || r.Failed ||",
		new_: "if h.opts.deleter == nil ||",
	},
	{
		name: "idem: reconcile never called (an unknown outcome goes straight to the policy)",
		file: "pkg/idem/remote.go",
		old:  "if reconcile != nil {",
		new_: "if false && reconcile != nil {",
	},
	{
		name: "idem: reconcile's answer inverted",
		file: "pkg/idem/remote.go",
		old:  "case err == nil && !applied:",
		new_: "case err == nil && applied:",
	},
	{
		name: "idem: a reconcile error read as not applied",
		file: "pkg/idem/remote.go",
		old:  "case err == nil && !applied:",
		new_: "case !applied:",
	},
	{
		name: "idem: a definite error treated as ambiguous (released UNKNOWN)",
		file: "pkg/idem/guard.go",
		old:  "if IsDefinite(reason) && !stillUnknown && (effectCtx.Err() == nil || NotSent(reason)) {",
		new_: "if false && IsDefinite(reason) && !stillUnknown && (effectCtx.Err() == nil || NotSent(reason)) {",
	},
	{
		name: "idem: a retry's definite failure forgets the unknown outcome it took over (released FAILED)",
		file: "pkg/idem/guard.go",
		old:  "if IsDefinite(reason) && !stillUnknown && (effectCtx.Err() == nil || NotSent(reason)) {",
		new_: "if IsDefinite(reason) && (effectCtx.Err() == nil || NotSent(reason)) {",
	},
	{
		name: "idem: a hold that met a takeover reported as a store failure",
		file: "pkg/idem/remote.go",
		old:  "case errors.Is(err, ErrLeaseLost):",
		new_: "case false:",
	},
	{
		name: "idem: an ambiguous error treated as definite (released FAILED)",
		file: "pkg/idem/guard.go",
		old:  "status := StatusUnknown",
		new_: "status := StatusFailed",
	},
	{
		name: "idem: a Definite mark trusted over a lost reply or a timeout (IsDefinite without sentOf)",
		file: "pkg/idem/definite.go",
		old:  "return errors.As(err, &d) && sentOf(err) != maybeSent",
		new_: "return errors.As(err, &d)",
	},
	{
		name: "idem: sentOf blind to net.Error (a reset or aborted connection's bare errno trusted as definite)",
		file: "pkg/idem/definite.go",
		old:  "case isTransportSentinel(err), asSelf(err, &ne):",
		new_: "case isTransportSentinel(err), false && asSelf(err, &ne):",
	},
	{
		name: "idem: a failed round trip (*url.Error) judged by what it wraps (a deadline's cause trusted as definite)",
		file: "pkg/idem/definite.go",
		old:  "if sentOf(ue.Err) == neverSent {\n\t\t\treturn neverSent\n\t\t}\n\t\treturn maybeSent",
		new_: "return sentOf(ue.Err)",
	},
	{
		name: "idem: sentOf blind to *url.Error (a refused dial in a failed round trip not trusted as definite)",
		file: "pkg/idem/definite.go",
		old:  "case asSelf(err, &ue):",
		new_: "case false && asSelf(err, &ue):",
	},
	{
		name: "idem: a definite error the effect returned after its context ended trusted (released FAILED)",
		file: "pkg/idem/guard.go",
		old:  "if IsDefinite(reason) && !stillUnknown && (effectCtx.Err() == nil || NotSent(reason)) {",
		new_: "if IsDefinite(reason) && !stillUnknown {",
	},
	{
		name: "idem: the effect started after a reconcile used its time up",
		file: "pkg/idem/guard.go",
		old:  "if err := effectCtx.Err(); err != nil {\n\t\t\t// The reconcile used the effect's time up",
		new_: "if err := effectCtx.Err(); false && err != nil {\n\t\t\t// The reconcile used the effect's time up",
	},
	{
		name: "idem: a rerun reported as executed (the window entered, not counted)",
		file: "pkg/idem/guard.go",
		old:  "res.Outcome = Rerun",
		new_: "res.Outcome = Executed",
	},
	{
		name: "idem: a reconcile's error marked Definite read as not applied",
		file: "pkg/idem/remote.go",
		old:  "case err == nil && !applied:",
		new_: "case (err == nil || IsDefinite(err)) && !applied:",
	},
	{
		name: "redisstore: an expired record's status reported as taken over (reconciled or held past its retention)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "if status and not (expiresAt ~= nil and expiresAt < now) then",
		new_: "if status then",
	},
	{
		name: "dynamostore: an expired record's status reported as taken over (prevExpiresAt not compared)",
		file: "pkg/idem/dynamostore/codec.go",
		old:  "if prevExpires != 0 && prevExpires < update/1000 {",
		new_: "if false && prevExpires != 0 && prevExpires < update/1000 {",
	},
	{
		name: "sqsbatch: a later copy of a key held in its batch skipped, not held",
		file: "pkg/idem/sqsbatch/record.go",
		old:  "if held != nil && keys[i].err == nil && keys[i].key == held.Key {",
		new_: "if false && held != nil && keys[i].err == nil && keys[i].key == held.Key {",
	},
	{
		name: "dynamostore: a HELD record taken over (no expiry read as expired)",
		file: "pkg/idem/dynamostore/shapes.go",
		old:  "name(n.TTL).LessThan(slotNowSeconds.marker()),",
		new_: "name(n.TTL).LessThan(slotNowSeconds.marker()),\n\t\tname(n.TTL).AttributeNotExists(),",
	},
	{
		name: "redisstore: a HELD record taken over (taken like UNKNOWN)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "or status == 'FAILED' or status == 'UNKNOWN'\n",
		new_: "or status == 'FAILED' or status == 'UNKNOWN' or status == 'HELD'\n",
	},
	{
		name: "dynamostore: an operator's resolve that lost its reply reports its own write as a change",
		file: "pkg/idem/dynamostore/resolve.go",
		old:  "mine := cur.Status == to && cur.Lease == lease",
		new_: "mine := false && cur.Status == to && cur.Lease == lease",
	},
	{
		name: "redisstore: an operator's resolve that lost its reply reports its own write as a change",
		file: "pkg/idem/redisstore/resolve.go",
		old:  "mine := rec.Status == to && rec.Lease == lease",
		new_: "mine := false && rec.Status == to && rec.Lease == lease",
	},
	{
		name: "dynamostore: a resolve fenced by the lease alone (writes over another operator's resolve)",
		file: "pkg/idem/dynamostore/resolve.go",
		old:  "same(n.Lease, old.Lease != \"\", old.Lease),\n\t\tsame(n.Status, true, string(old.Status)),\n\t\tsame(n.Attempts, old.Attempts != 0, old.Attempts),\n\t\tsame(n.UpdatedAt, !old.UpdatedAt.IsZero(), millis(old.UpdatedAt)),",
		new_: "same(n.Lease, old.Lease != \"\", old.Lease),",
	},
	{
		name: "redisstore: a resolve fenced by the lease alone (writes over another operator's resolve)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "if (f[1] or '') ~= ARGV[1] or f[2] ~= ARGV[2] or (f[3] or '') ~= ARGV[3] or (f[4] or '') ~= ARGV[4] then",
		new_: "if (f[1] or '') ~= ARGV[1] then",
	},
	{
		name: "dynamostore: a held record resolved without an expiry (it stays for ever)",
		file: "pkg/idem/dynamostore/resolve.go",
		old:  "if old.ExpiresAt.IsZero() {",
		new_: "if false && old.ExpiresAt.IsZero() {",
	},
	{
		name: "redisstore: a held record resolved without an expiry (it stays for ever)",
		file: "pkg/idem/redisstore/scripts.go",
		old:  "if not f[5] then\n\tredis.call('HSET', key, 'expiresAt', ARGV[8])\nend",
		new_: "",
	},
	{
		name: "idem: a duplicate of an operator's receipt does not say so (Resolved)",
		file: "pkg/idem/guard.go",
		old:  "res.Resolved = Duplicate, rec.Result, rec.ResultOmitted, rec.Resolved",
		new_: "res.Resolved = Duplicate, rec.Result, rec.ResultOmitted, false",
	},
}
