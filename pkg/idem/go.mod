module github.com/exactlyonce/sqsidem/pkg/idem

go 1.26
