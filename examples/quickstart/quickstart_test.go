// Package quickstart_test runs the quick starts the README quotes, as a
// reader would: it builds the client and server programs, serves on
// loopback, and runs the client against the server, checking each run's
// exit code and output.
package quickstart_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build compiles both quick starts into a temporary directory and returns
// the client's and the server's paths.
func build(t *testing.T) (client, server string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the quick-start test builds the programs with the go command")
	dir := t.TempDir()
	client, server = filepath.Join(dir, "client"), filepath.Join(dir, "server")
	for path, pkg := range map[string]string{client: "./client", server: "./server"} {
		out, err := exec.Command(goTool, "build", "-o", path, pkg).CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, out)
	}
	return client, server
}

// serve starts the server program on addr and returns its URL once it
// listens. The process is killed when the test ends.
func serve(t *testing.T, bin, addr, database string) string {
	t.Helper()
	cmd := exec.Command(bin, "-addr", addr, "-database", database)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	for lines.Scan() { // bounded: the scan ends when the process exits
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			go func() { // keep draining, so the server never blocks on its log
				for lines.Scan() {
				}
			}()
			return m[1]
		}
		t.Log("server:", lines.Text())
	}
	t.Fatalf("the server exited before listening: %v", cmd.Wait())
	return ""
}

type run struct {
	code           int
	stdout, stderr string
}

func runClient(t *testing.T, bin, url, journal, token string, amount string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-url", url, "-journal", journal, "-amount", amount)
	cmd.Env = append(os.Environ(), "API_TOKEN="+token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return run{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestQuickStart(t *testing.T) {
	client, server := build(t)
	stores := map[string]string{"memstore": ""}
	if dsn := os.Getenv("IDEM_TEST_DATABASE"); dsn != "" {
		stores["pgstore"] = dsn
	} else if os.Getenv("CI") == "true" {
		t.Fatal("IDEM_TEST_DATABASE is not set; CI needs the PostgreSQL tests")
	} else {
		t.Log("IDEM_TEST_DATABASE not set: the pgstore quick start is skipped")
	}
	for name, database := range stores {
		t.Run(name, func(t *testing.T) {
			url := serve(t, server, "127.0.0.1:0", database)
			dir := t.TempDir()
			token := "quickstart-" + rand.Text() // a fresh account: its keys are its own
			journal := func(name string) string { return filepath.Join(dir, name) }

			first := runClient(t, client, url, journal("a"), token, "1000")
			require.Equal(t, 0, first.code, first.stderr)
			charged := regexp.MustCompile(`^201 \{"amount":1000,"id":"(ch_\w+)"\} \(replayed false, from journal false\)\n$`)
			m := charged.FindStringSubmatch(first.stdout)
			require.NotNil(t, m, "stdout: %q", first.stdout)
			id := m[1]

			for _, tc := range []struct {
				name, journal, token, amount string
				code                         int
				stdout, stderr               string
			}{
				{"same journal: answered from it", "a", token, "1000", 0,
					`^201 \{"amount":1000,"id":"` + id + `"\} \(replayed false, from journal true\)\n$`, `^$`},
				{"another journal: the server replays", "b", token, "1000", 0,
					`^201 \{"amount":1000,"id":"` + id + `"\} \(replayed true, from journal false\)\n$`, `^$`},
				{"a different body: refused by the journal", "b", token, "2000", 1,
					`^$`, `order-1 was charged with a different request`},
				{"a different body: refused by the server", "c", token, "2000", 1,
					`^$`, `order-1 was charged with a different request`},
				{"a refused charge: final, and said so", "f", token + "-4", "0", 1,
					`^400 want a JSON body with a positive amount \(replayed false, from journal false\)\n$`,
					`the server refused order-1 with 400`},
				{"another account: its own charge", "d", token + "-2", "1000", 0,
					`^201 \{"amount":1000,"id":"ch_\w+"\} \(replayed false, from journal false\)\n$`, `^$`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := runClient(t, client, url, journal(tc.journal), tc.token, tc.amount)
					assert.Equal(t, tc.code, r.code, "stderr: %s", r.stderr)
					assert.Regexp(t, tc.stdout, r.stdout)
					assert.Regexp(t, tc.stderr, r.stderr)
				})
			}

			t.Run("no server yet, then resumed", func(t *testing.T) {
				addr := freeAddr(t)
				down := runClient(t, client, "http://"+addr, journal("e"), token+"-3", "1000")
				assert.Equal(t, 1, down.code)
				assert.Empty(t, down.stdout)
				assert.Contains(t, down.stderr, "no final answer after 5 attempts; run again to finish")

				later := serve(t, server, addr, database)
				up := runClient(t, client, later, journal("e"), token+"-3", "1000")
				assert.Equal(t, 0, up.code, up.stderr)
				assert.Regexp(t, `resumed [0-9a-f-]{36}: 201\n`, up.stderr)
				assert.Regexp(t, `^201 \{"amount":1000,"id":"ch_\w+"\} \(replayed false, from journal true\)\n$`, up.stdout)
			})

			if database != "" {
				// Every run above charged order-1 once per account, whatever
				// was retried, replayed or refused.
				ctx := context.Background()
				pool, err := pgxpool.New(ctx, database)
				require.NoError(t, err)
				defer pool.Close()
				for account, want := range map[string]int{token: 1, token + "-2": 1, token + "-3": 1} {
					var n int
					require.NoError(t, pool.QueryRow(ctx,
						`SELECT count(*) FROM quickstart_charges WHERE account = $1`, account).Scan(&n))
					assert.Equal(t, want, n, account)
				}
				_, err = pool.Exec(ctx, `DELETE FROM quickstart_charges WHERE account LIKE $1`, token+"%")
				assert.NoError(t, err)
				_, err = pool.Exec(ctx, `DELETE FROM idem_keys WHERE scope LIKE $1`, token+"%")
				assert.NoError(t, err)
			}
		})
	}
}
