// Command bench measures idem against what its users would use instead, in
// one run on one machine, and prints Markdown tables of medians and ratios.
//
//	go run ./bench          # the full run recorded in BENCHMARKS.md
//	go run ./bench -short   # a quick run, under two minutes
//
// Every server and database is on loopback. The server half needs
// PostgreSQL: -database, or IDEM_TEST_DATABASE.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

type config struct {
	short    bool
	rounds   int
	seqOps   int
	tputDur  time.Duration
	database string

	inProcessOnly bool
}

func main() {
	var cfg config
	flag.BoolVar(&cfg.short, "short", false, "a quick run (under two minutes)")
	flag.StringVar(&cfg.database, "database", os.Getenv("IDEM_TEST_DATABASE"), "PostgreSQL DSN for the server benchmarks (default $IDEM_TEST_DATABASE)")
	only := flag.String("only", "", "run only the client or server half (client, server, inprocess)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	cfg.rounds, cfg.seqOps, cfg.tputDur = 5, 400, time.Second
	if cfg.short {
		cfg.rounds, cfg.seqOps, cfg.tputDur = 3, 150, 300*time.Millisecond
	}
	host, _ := os.Hostname()
	fmt.Printf("## idem benchmarks\n\n%s, %s/%s, %d CPUs, host %s, %s; rounds %d.\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host, time.Now().UTC().Format("2006-01-02"), cfg.rounds)
	if *only == "" || *only == "client" {
		benchClient(cfg)
	}
	cfg.inProcessOnly = *only == "inprocess"
	if *only != "client" {
		benchServer(cfg)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
