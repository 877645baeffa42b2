// Package testpb is the Charges service of grpcidem's tests and example,
// compiled from charges.proto with protoc, protoc-gen-go and
// protoc-gen-go-grpc (see the go:generate line; the output is committed,
// so building needs none of them).
package testpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative charges.proto
