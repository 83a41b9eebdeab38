module github.com/exactlyonce/sqsidem/pkg/idem/otelidem

go 1.26

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/exactlyonce/sqsidem/pkg/idem v0.3.0
	github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch v0.3.0
	go.opentelemetry.io/otel v1.46.0
	go.opentelemetry.io/otel/sdk v1.46.0
	go.opentelemetry.io/otel/trace v1.46.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/metric v1.46.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

// In this repository the modules are built together (go.work); a user's
// go get resolves the tagged versions and ignores these lines.
replace (
	github.com/exactlyonce/sqsidem/pkg/idem => ../
	github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch => ../sqsbatch
)
