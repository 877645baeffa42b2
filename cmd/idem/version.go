package main

// This file holds "idem version", read from the build information the Go
// toolchain puts in the binary.

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what idem version reports.
type versionInfo struct {
	// Version is the module's version ("v0.2.0"), as go install
	// module@version records it, or "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision, Time and Modified are the version control state of a
	// build from a checkout, when the toolchain recorded it (-buildvcs).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the toolchain that built the binary.
	Go string `json:"go"`
}

// versionOf reads bi; ok is ReadBuildInfo's, false for a binary built
// without module support.
func versionOf(bi *debug.BuildInfo, ok bool) versionInfo {
	if !ok || bi == nil {
		return versionInfo{Version: "unknown", Go: "unknown"}
	}
	v := versionInfo{Version: bi.Main.Version, Go: bi.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version on one line: "idem v0.2.0 (go1.26.0)", or
// "idem (devel) 3f2a9c1d5e7b, modified (go1.26.0)".
func (v versionInfo) String() string {
	s := "idem " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " " + rev
		if v.Modified {
			s += ", modified"
		}
	}
	return fmt.Sprintf("%s (%s)", s, v.Go)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print idem's version",
		Long: `version prints the version of this idem binary: the module version go
install recorded, or "(devel)" and the commit for a build from a checkout,
and the Go version that built it.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := versionOf(debug.ReadBuildInfo())
			if a.json {
				return a.writeJSON(v)
			}
			_, err := fmt.Fprintln(a.stdout, v)
			return err
		},
	}
}
