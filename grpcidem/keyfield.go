// This file holds the key's place in a request message (ServerOptions.KeyField
// and ClientOptions.KeyField): a path of field names, resolved once per
// message type.

package grpcidem

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrNoKeyField is wrapped by the error for a request message that has no
// string field at the KeyField path of the options: the server answers
// such a call Internal (and logs this error), the client refuses to send
// it.
var ErrNoKeyField = errors.New("grpcidem: the request message has no string field at KeyField")

// fieldPath is a parsed KeyField: the names of singular fields, each but
// the last a message field, the last a string field. Safe for concurrent
// use.
type fieldPath struct {
	names    []protoreflect.Name
	text     string
	resolved sync.Map // protoreflect.FullName of the message -> resolved
}

// resolved is a fieldPath looked up in one message type.
type resolved struct {
	fields []protoreflect.FieldDescriptor // nil if err
	err    error
}

// parseFieldPath parses a dotted path of protobuf field names.
func parseFieldPath(s string) (*fieldPath, error) {
	p := &fieldPath{text: s}
	for part := range strings.SplitSeq(s, ".") {
		if !protoreflect.Name(part).IsValid() {
			return nil, fmt.Errorf("%q is not a dotted path of field names", s)
		}
		p.names = append(p.names, protoreflect.Name(part))
	}
	return p, nil
}

// in returns the fields of the path in the message type md, or an error
// wrapping ErrNoKeyField.
func (p *fieldPath) in(md protoreflect.MessageDescriptor) ([]protoreflect.FieldDescriptor, error) {
	if r, ok := p.resolved.Load(md.FullName()); ok {
		return r.(resolved).fields, r.(resolved).err
	}
	var r resolved
	at := md
	for i, name := range p.names {
		fd := at.Fields().ByName(name)
		last := i == len(p.names)-1
		switch {
		case fd == nil:
			r.err = fmt.Errorf("%w: %s has no field %q", ErrNoKeyField, at.FullName(), name)
		case fd.Cardinality() == protoreflect.Repeated:
			r.err = fmt.Errorf("%w: %s is repeated", ErrNoKeyField, fd.FullName())
		case !last && fd.Kind() != protoreflect.MessageKind:
			r.err = fmt.Errorf("%w: %s is no message", ErrNoKeyField, fd.FullName())
		case last && fd.Kind() != protoreflect.StringKind:
			r.err = fmt.Errorf("%w: %s is no string", ErrNoKeyField, fd.FullName())
		}
		if r.err != nil {
			r.fields = nil
			break
		}
		r.fields = append(r.fields, fd)
		if !last {
			at = fd.Message()
		}
	}
	p.resolved.Store(md.FullName(), r)
	return r.fields, r.err
}

// get returns the string at the path in m: "" if it, or a message on the
// way to it, is unset.
func (p *fieldPath) get(m protoreflect.Message) (string, error) {
	fields, err := p.in(m.Descriptor())
	if err != nil {
		return "", err
	}
	for _, fd := range fields[:len(fields)-1] {
		if !m.Has(fd) {
			return "", nil
		}
		m = m.Get(fd).Message()
	}
	return m.Get(fields[len(fields)-1]).String(), nil
}

// without returns a copy of msg with the path's field cleared (msg itself
// if the field is unset). The path must resolve in msg's type.
func (p *fieldPath) without(msg proto.Message) proto.Message {
	fields, _ := p.in(msg.ProtoReflect().Descriptor())
	cp := proto.Clone(msg)
	m := cp.ProtoReflect()
	for _, fd := range fields[:len(fields)-1] {
		if !m.Has(fd) {
			return msg
		}
		m = m.Mutable(fd).Message()
	}
	m.Clear(fields[len(fields)-1])
	return cp
}

// set returns a copy of msg with the path's field set to key, making the
// messages on the way to it. The path must resolve in msg's type.
func (p *fieldPath) set(msg proto.Message, key string) proto.Message {
	fields, _ := p.in(msg.ProtoReflect().Descriptor())
	cp := proto.Clone(msg)
	m := cp.ProtoReflect()
	for _, fd := range fields[:len(fields)-1] {
		m = m.Mutable(fd).Message()
	}
	m.Set(fields[len(fields)-1], protoreflect.ValueOfString(key))
	return cp
}
