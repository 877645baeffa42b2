// Command bench measures idem against what its users would use instead, in
// one run on one machine, prints Markdown tables of medians and ratios, and
// draws the same run's samples as SVG charts.
//
//	go run ./bench                  # the full run recorded in BENCHMARKS.md; charts to docs/bench
//	go run ./bench -short           # a quick run, under two minutes; no charts
//	go run ./bench -short -plot DIR # a quick run, charts to DIR
//
// Every server and database is on loopback. The server half needs
// PostgreSQL for its pgstore rows (-database, or IDEM_TEST_DATABASE) and
// Redis for its redisstore rows (-redis, or IDEM_TEST_REDIS: one address,
// or a cluster's seeds, comma-separated, such as scripts/redis-cluster.sh
// start prints).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

type config struct {
	short    bool
	rounds   int
	seqOps   int
	tputDur  time.Duration
	database string
	redis    string

	inProcessOnly bool
}

// defaultPlotDir is where the full run draws its charts, relative to the
// module root: the charts BENCHMARKS.md and the README show.
const defaultPlotDir = "docs/bench"

func main() {
	var cfg config
	flag.BoolVar(&cfg.short, "short", false, "a quick run (under two minutes)")
	flag.StringVar(&cfg.database, "database", os.Getenv("IDEM_TEST_DATABASE"), "PostgreSQL DSN for the server benchmarks (default $IDEM_TEST_DATABASE)")
	flag.StringVar(&cfg.redis, "redis", os.Getenv("IDEM_TEST_REDIS"), "Redis address, or a cluster's seeds comma-separated, for the redisstore rows (default $IDEM_TEST_REDIS)")
	only := flag.String("only", "", "run only the client or server half (client, server, inprocess)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	plotDir := flag.String("plot", "", "write SVG charts of this run to this directory (default "+defaultPlotDir+" for the full run, none for -short; -plot= for none)")
	flag.Parse()
	plotSet := false
	flag.Visit(func(f *flag.Flag) { plotSet = plotSet || f.Name == "plot" })
	if !plotSet && !cfg.short {
		*plotDir = defaultPlotDir
	}
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
	if *plotDir != "" {
		must(os.MkdirAll(*plotDir, 0o755)) // fail before measuring, not after
	}
	r := &report{machine: thisMachine(), cfg: cfg, command: command(cfg, *only)}
	fmt.Printf("## idem benchmarks\n\n%s; rounds %d.\n", r.machine, cfg.rounds)
	if *only == "" || *only == "client" {
		r.client = benchClient(cfg)
		r.client.print()
	}
	cfg.inProcessOnly = *only == "inprocess"
	if *only != "client" {
		r.server = benchServer(cfg)
		r.server.print()
	}
	printTargets(r.client, r.server)
	if *plotDir != "" {
		files, err := r.draw(*plotDir)
		must(err)
		fmt.Println()
		for _, f := range files {
			fmt.Printf("Chart: %s\n", f)
		}
	}
}

// report is everything one run measured. The tables, the targets and the
// charts are all drawn from it, so they cannot disagree.
type report struct {
	machine machine
	cfg     config
	command string         // how the run was started, for the captions
	client  *clientResults // nil when not run
	server  *serverResults // nil when not run
}

// command is the run's command line as a reader would type it, without
// the database's address.
func command(cfg config, only string) string {
	c := "go run ./bench"
	if cfg.short {
		c += " -short"
	}
	if only != "" {
		c += " -only " + only
	}
	return c
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
