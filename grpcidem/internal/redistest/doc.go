// Package redistest runs grpcidem's race and fault runs (package
// grpcidem/internal/scenario) on redisstore. It is a module of its own
// because redisstore's needs Go 1.26 and grpcidem's only Go 1.25: a test
// dependency of grpcidem on redisstore would raise grpcidem's go line for
// every user. It has no code but its tests.
package redistest
