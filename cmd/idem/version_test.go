package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"go install module@version", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.2.0"}}, true,
			"idem v0.2.0 (go1.26.0)"},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs", "git", "vcs.revision", "3f2a9c1d5e7b90aa11223344556677889900aabb", "vcs.time", "2026-12-25T10:00:00Z", "vcs.modified", "false")}, true,
			"idem (devel) 3f2a9c1d5e7b (go1.26.0)"},
		{"a modified checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "3f2a9c1d5e7b90aa", "vcs.modified", "true")}, true,
			"idem (devel) 3f2a9c1d5e7b, modified (go1.26.0)"},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, "idem (devel) (go1.26.0)"},
		{"no build info", nil, false, "idem unknown (unknown)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, versionOf(tc.bi, tc.ok).String())
		})
	}
}

// TestVersionCommand: idem version reads this binary's build information.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	r := runIdem(t, "", nil, "version")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "idem "), r.stdout)
	assert.True(t, strings.HasSuffix(r.stdout, "("+runtime.Version()+")\n"), r.stdout)
	r = runIdem(t, "", nil, "version", "--json")
	assert.Contains(t, r.stdout, `"go": "`+runtime.Version()+`"`)
	assert.Contains(t, r.stdout, `"version": "`)
}
