package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// result is what one in-process run of the command gave.
type result struct {
	code           int
	stdout, stderr string
}

// runIdem runs the command in this process with args, no terminal, and
// the environment vars (NAME=value).
func runIdem(t testing.TB, stdin string, vars []string, args ...string) result {
	t.Helper()
	return runIdemEnv(context.Background(), stdin, vars, args...)
}

// runIdemContext runs the command with ctx: cancelling it is Ctrl-C.
func runIdemContext(ctx context.Context, t testing.TB, args ...string) result {
	t.Helper()
	return runIdemEnv(ctx, "", nil, args...)
}

func runIdemEnv(ctx context.Context, stdin string, vars []string, args ...string) result {
	var out, errb bytes.Buffer
	env := env{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string {
			for _, kv := range vars {
				if name, v, _ := strings.Cut(kv, "="); name == k {
					return v
				}
			}
			return ""
		},
	}
	code := run(ctx, env, args)
	return result{code, out.String(), errb.String()}
}
