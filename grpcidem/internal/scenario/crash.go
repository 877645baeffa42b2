package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
)

// CrashCalls calls are made by Crash's client processes, which are killed
// CrashKills times.
const (
	CrashCalls = 40
	CrashKills = 6
)

// CrashCustomer is the customer of Crash's call i.
func CrashCustomer(i int) string { return "crash-" + strconv.Itoa(i) }

// CrashResult is what a Crash run saw: how many client processes were
// killed, and how many calls the processes resumed from the journal.
type CrashResult struct {
	Kills, Resumed int
}

// Crash serves the Charges service, protected by the server interceptor
// on store (naive: none), and re-executes the test binary as a client
// process (the test named TestCrashChild, which must call CrashChild)
// that makes CrashCalls calls through the client interceptor with a
// journal. The handler SIGKILLs the process at every 6th execution,
// CrashKills times: alternately before the charge is taken and after it,
// before the answer. Each restart resumes the journal's pending calls,
// through the connection registered with the Transport, then makes every
// call again under the key bound to its name, which the journal answers
// for the calls already done; the last process must get every answer.
//
// With naive, the client has no journal: each process mints new keys and
// notes the calls it saw answered, and it is killed only after a charge,
// where a lost answer makes it charge again.
func Crash(t *testing.T, store server.Store, ledger Ledger, naive bool) CrashResult {
	t.Helper()
	var pid, killed atomic.Int64
	kill := func(n int64, after bool) {
		if n%6 != 0 || after != (naive || n/6%2 == 0) {
			return
		}
		if killed.Add(1) > CrashKills {
			return
		}
		syscall.Kill(int(pid.Load()), syscall.SIGKILL)
	}
	svc := &Charges{
		Ledger: ledger,
		Hold:   func(_ context.Context, n int64) { kill(n, false) },
		Answer: func(_ context.Context, n int64, _ *testpb.ChargeRequest) error { kill(n, true); return nil },
	}
	var chain []grpc.UnaryServerInterceptor
	if !naive {
		chain = append(chain, grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{SingleTenant: true}))
	}
	addr := Serve(t, svc, chain)
	dir := t.TempDir()
	var res CrashResult
	for run := 0; run <= CrashKills+1; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), "IDEM_GRPC_CRASH_ADDR="+addr, "IDEM_GRPC_CRASH_DIR="+dir,
			"IDEM_GRPC_CRASH_NAIVE="+strconv.FormatBool(naive))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid.Store(int64(cmd.Process.Pid))
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.Kills++
			continue
		}
		if err != nil || !strings.Contains(out.String(), "--- PASS: TestCrashChild") {
			t.Fatalf("the client process failed (%v):\n%s", err, out.String())
		}
		res.Resumed = readCount(t, filepath.Join(dir, "resumed"))
		return res
	}
	t.Fatalf("no client process finished in %d runs", CrashKills+2)
	return res
}

// readCount returns the sum of the numbers in the file, one a line, 0 if
// it is not there.
func readCount(t testing.TB, path string) int {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatal(err)
		}
		n += v
	}
	return n
}

// appendLine appends line to the file at path, durably.
func appendLine(t testing.TB, path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(line + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// CrashChild is the client process of Crash, run as the test
// TestCrashChild of a test binary; it skips when run as a test of its own.
func CrashChild(t *testing.T) {
	addr := os.Getenv("IDEM_GRPC_CRASH_ADDR")
	if addr == "" {
		t.Skip("the client process of a crash test")
	}
	dir := os.Getenv("IDEM_GRPC_CRASH_DIR")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	must := func(err error, what string, args ...any) {
		if err != nil {
			t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
		}
	}
	dial := func(ic grpc.UnaryClientInterceptor) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(ic))
		must(err, "dial")
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	if os.Getenv("IDEM_GRPC_CRASH_NAIVE") == "true" {
		ic, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond})
		must(err, "interceptor")
		c := testpb.NewChargesClient(dial(ic))
		donePath := filepath.Join(dir, "done")
		done := map[string]bool{}
		if b, err := os.ReadFile(donePath); err == nil {
			for _, l := range strings.Fields(string(b)) {
				done[l] = true
			}
		}
		for i := range CrashCalls {
			if done[strconv.Itoa(i)] {
				continue
			}
			_, err := c.Charge(ctx, Charge(CrashCustomer(i), 100))
			must(err, "call %d", i)
			appendLine(t, donePath, strconv.Itoa(i))
		}
		return
	}
	j, err := idem.OpenJournal(filepath.Join(dir, "journal"), idem.JournalOptions{})
	must(err, "journal")
	defer j.Close()
	tr := grpcidem.NewTransport(nil)
	client, err := idem.New(idem.Options{Journal: j, Transport: tr, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond,
		Budget: idem.BudgetOptions{Capacity: -1}})
	must(err, "client")
	ic, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{Client: client})
	must(err, "interceptor")
	cc := dial(ic)
	tr.Register(cc.Target(), cc)

	results, err := client.Resume(ctx)
	must(err, "resume")
	for _, r := range results {
		must(r.Err, "resumed %s", r.Operation.Key)
		if r.Operation.URL != "grpc:///idem.test.v1.Charges/Charge" {
			t.Fatalf("resumed %s: URL %q", r.Operation.Key, r.Operation.URL)
		}
		var reply testpb.ChargeReply
		must(grpcidem.Answer(r.Response, &reply), "resumed %s's answer", r.Operation.Key)
		if reply.GetAmount() != 100 {
			t.Fatalf("resumed %s: amount %d", r.Operation.Key, reply.GetAmount())
		}
	}
	appendLine(t, filepath.Join(dir, "resumed"), strconv.Itoa(len(results)))

	c := testpb.NewChargesClient(cc)
	for i := range CrashCalls {
		key, err := client.NamedKey(fmt.Sprintf("charge/%d", i))
		must(err, "named key %d", i)
		reply, err := c.Charge(ctx, Charge(CrashCustomer(i), 100), grpcidem.Key(key))
		must(err, "call %d", i)
		if reply.GetAmount() != 100 {
			t.Fatalf("call %d: amount %d", i, reply.GetAmount())
		}
	}
	pending, err := j.Pending()
	must(err, "pending")
	if len(pending) != 0 {
		t.Fatalf("%d calls still pending", len(pending))
	}
}
