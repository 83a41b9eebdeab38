module github.com/exactlyonce/sqsidem/pkg/idem/redisstore

go 1.26

require (
	github.com/exactlyonce/sqsidem/pkg/idem v0.3.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

// In this repository the modules are built together (go.work); a user's
// go get resolves the tagged versions and ignores this line.
replace github.com/exactlyonce/sqsidem/pkg/idem => ../
