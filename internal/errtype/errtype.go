// Package errtype names the class of an error for a metric attribute
// (OpenTelemetry's error.type) without reading its text: the Go type of the
// outermost error in its chain that is more than a wrapper. The client's
// and the server's observers share it.
package errtype

import (
	"errors"
	"reflect"
)

// Other is the name of an error whose chain holds only wrappers.
const Other = "_OTHER"

// wrappers are the error types that only carry text or wrap another
// error: Name looks past them.
var wrappers = map[string]bool{
	"*errors.errorString": true,
	"*errors.joinError":   true,
	"*fmt.wrapError":      true,
	"*fmt.wrapErrors":     true,
	"*url.Error":          true,
}

// Name returns the Go type of the outermost error in err's chain (followed
// through errors.Unwrap) that is not a plain wrapper, such as
// "*net.OpError"; Other if there is none; "" for a nil err.
func Name(err error) string {
	if err == nil {
		return ""
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if name := reflect.TypeOf(e).String(); !wrappers[name] {
			return name
		}
	}
	return Other
}
