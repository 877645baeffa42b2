package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// writeBody prints a body for a person: indented JSON when it is JSON, the
// text when it is text, a hex dump when it is binary. With raw it writes
// the exact bytes.
func writeBody(w io.Writer, b []byte, raw bool) error {
	if raw {
		_, err := w.Write(b)
		return err
	}
	switch bodyKind(b) {
	case "json":
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			out.WriteByte('\n')
			_, err := w.Write(out.Bytes())
			return err
		}
		fallthrough
	case "text":
		if _, err := w.Write(b); err != nil {
			return err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			_, err := io.WriteString(w, "\n")
			return err
		}
		return nil
	}
	_, err := io.WriteString(w, hex.Dump(b))
	return err
}

// bodyKind says how to show b: "json", "text" or "binary". JSON is
// recognised by its content, whatever the Content-Type says; text is UTF-8
// without control characters other than tab, CR and LF.
func bodyKind(b []byte) string {
	if len(bytes.TrimSpace(b)) > 0 && json.Valid(b) {
		return "json"
	}
	if !utf8.Valid(b) {
		return "binary"
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' && c != '\n' || c == 0x7f {
			return "binary"
		}
	}
	return "text"
}
