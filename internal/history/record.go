package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Recorder appends a process's answers to a history file, one JSON line
// each, written when the answer comes: a process killed later loses none
// it wrote. It is safe for concurrent use. A nil *Recorder records
// nothing.
type Recorder struct {
	mu     sync.Mutex
	f      *os.File
	client int
	err    error
}

// Create opens path for appending (creating it, mode 0600), for the
// answers of client (a number the report names it by).
func Create(path string, client int) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Recorder{f: f, client: client}, nil
}

// Now is the history's clock: the wall clock in nanoseconds, which every
// process of a run on one machine shares.
func Now() int64 { return time.Now().UnixNano() }

// Answer records a final answer for key naming outcome, to a request sent
// at call (Now) and answered now. The first write error is kept and
// returned by Close.
func (r *Recorder) Answer(key, outcome string, replayed bool, call int64) {
	if r == nil {
		return
	}
	op := Op{Key: key, Kind: Answer, Outcome: outcome, Replayed: replayed, Call: call, Return: Now(), Client: r.client}
	line, _ := json.Marshal(op)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		_, r.err = r.f.Write(append(line, '\n'))
	}
}

// Close closes the file and returns the first error of the recorder.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.err, r.f.Close())
}

// Read reads a history file Recorders wrote. A last line cut short (its
// writer was killed while writing it) is dropped; any other line that is
// not an operation is an error.
func Read(path string) ([]Op, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return decode(f)
}

func decode(rd io.Reader) ([]Op, error) {
	var ops []Op
	br := bufio.NewReader(rd)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return ops, nil // a partial last line was never a whole answer
		}
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		var op Op
		if err := json.Unmarshal(line, &op); err != nil || op.Key == "" || op.Kind != Answer && op.Kind != Effect {
			return nil, fmt.Errorf("history: line %d is not an operation: %q", n, line)
		}
		ops = append(ops, op)
	}
}
