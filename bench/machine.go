package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// machine says where and when a run happened. Every table header and chart
// caption names it, so a figure is never read apart from its machine.
type machine struct {
	cpu    string // the CPU model, from /proc/cpuinfo
	cpus   int
	goVer  string
	goos   string
	goarch string
	host   string
	date   time.Time
}

func thisMachine() machine {
	host, _ := os.Hostname()
	return machine{
		cpu: cpuModel(), cpus: runtime.NumCPU(),
		goVer: runtime.Version(), goos: runtime.GOOS, goarch: runtime.GOARCH,
		host: host, date: time.Now().UTC(),
	}
}

// cpuModel is the first "model name" in /proc/cpuinfo, or "unknown CPU"
// where there is none (not Linux, or an architecture that names it
// otherwise).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(name) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return "unknown CPU"
}

// String is the line printed under the title of the tables.
func (m machine) String() string {
	return fmt.Sprintf("%s, %s/%s, %s, %d CPUs, host %s, %s", m.goVer, m.goos, m.goarch, m.cpu, m.cpus, m.host, m.day())
}

// caption is the machine in a chart's caption.
func (m machine) caption() string {
	return fmt.Sprintf("%s, %d CPUs, %s, %s/%s, %s", m.cpu, m.cpus, m.goVer, m.goos, m.goarch, m.day())
}

func (m machine) day() string { return m.date.Format("2006-01-02") }
