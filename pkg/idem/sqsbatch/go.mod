module github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch

go 1.26

require github.com/exactlyonce/sqsidem/pkg/idem v0.3.0

require github.com/aws/aws-lambda-go v1.55.1

// In this repository the modules are built together (go.work); a user's
// go get resolves the tagged versions and ignores this line.
replace github.com/exactlyonce/sqsidem/pkg/idem => ../
