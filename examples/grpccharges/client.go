package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
)

// runClient is the client process: with a journal, it resumes what its
// predecessor left pending and makes every operation's call under the key
// bound to its name; naive, it makes the calls it has not seen answered,
// under new keys.
func runClient() error {
	addr, dir := os.Getenv("GRPCCHARGES_ADDR"), os.Getenv("GRPCCHARGES_DIR")
	ops, err := strconv.Atoi(os.Getenv("GRPCCHARGES_OPS"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if os.Getenv("GRPCCHARGES_NAIVE") == "true" {
		return runNaive(ctx, addr, dir, ops)
	}

	journal, err := idem.OpenJournal(filepath.Join(dir, "client.journal"), idem.JournalOptions{})
	if err != nil {
		return err
	}
	defer journal.Close()
	transport := grpcidem.NewTransport(nil)
	client, err := idem.New(idem.Options{Journal: journal, Transport: transport,
		BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{Client: client})
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(retry))
	if err != nil {
		return err
	}
	defer conn.Close()
	transport.Register(conn.Target(), conn)

	resumed, err := client.Resume(ctx)
	if err != nil {
		return err
	}
	for _, r := range resumed {
		if r.Err == nil {
			r.Err = grpcidem.Answer(r.Response, new(structpb.Struct))
		}
		if r.Err != nil {
			return fmt.Errorf("resuming %s: %w", r.Operation.Key, r.Err)
		}
	}
	if err := appendLine(filepath.Join(dir, "resumed"), strconv.Itoa(len(resumed))); err != nil {
		return err
	}
	for op := range ops {
		key, err := client.NamedKey("charge/" + strconv.Itoa(op))
		if err != nil {
			return err
		}
		if _, err := charge(ctx, conn, op, grpcidem.Key(key)); err != nil {
			return fmt.Errorf("operation %d: %w", op, err)
		}
	}
	return nil
}

// runNaive makes the calls not yet seen answered, with keys minted in
// this process.
func runNaive(ctx context.Context, addr, dir string, ops int) error {
	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(retry))
	if err != nil {
		return err
	}
	defer conn.Close()
	path := filepath.Join(dir, "answered")
	done := map[string]bool{}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Fields(string(b)) {
			done[l] = true
		}
	}
	for op := range ops {
		if done[strconv.Itoa(op)] {
			continue
		}
		if _, err := charge(ctx, conn, op); err != nil {
			return fmt.Errorf("operation %d: %w", op, err)
		}
		if err := appendLine(path, strconv.Itoa(op)); err != nil {
			return err
		}
	}
	return nil
}

// appendLine appends line to the file at path, durably.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
