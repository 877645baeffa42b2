package redisstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAssess holds the decision Findings makes for one server on readings
// a real server is awkward to set up for; TestFindings drives the common
// ones through real servers.
func TestAssess(t *testing.T) {
	t.Parallel()
	type found struct {
		Err      error
		Severity Severity
	}
	durable := map[string]string{"maxmemory-policy": "noeviction", "maxmemory": "0", "save": "", "appendonly": "yes", "appendfsync": "always"}
	info := func(kv ...string) map[string]string {
		m := map[string]string{"maxmemory_policy": "noeviction", "maxmemory": "0", "aof_enabled": "1", "role": "master", "connected_slaves": "0"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		r       reading
		wait    int
		want    []found
		setting string // in the first finding's Setting
	}{
		{"clean", reading{info: info(), config: durable}, 0, nil, ""},
		{"INFO's policy wins over CONFIG's", reading{info: info("maxmemory_policy", "allkeys-lfu"), config: durable}, 0,
			[]found{{ErrEvictionPolicy, Critical}}, "allkeys-lfu"},
		{"maxmemory in the setting", reading{info: info("maxmemory_policy", "volatile-random", "maxmemory", "104857600"), config: durable}, 0,
			[]found{{ErrEvictionPolicy, Critical}}, "maxmemory 104857600"},
		{"no policy anywhere", reading{info: map[string]string{"aof_enabled": "1", "role": "master", "connected_slaves": "0"}, configRefused: "NOPERM"}, 0,
			[]found{{ErrUnverified, Critical}, {ErrUnverified, Notice}}, "maxmemory-policy not reported (CONFIG GET refused: NOPERM)"},
		{"INFO refused, CONFIG durable: replicas unknown", reading{config: durable, infoRefused: "ERR unknown command"}, 0,
			[]found{{ErrUnverified, Notice}}, "INFO refused: ERR unknown command"},
		{"INFO refused, WaitReplicas set: claims would say so", reading{config: durable, infoRefused: "ERR"}, 1, nil, ""},
		{"both refused", reading{infoRefused: "ERR a", configRefused: "NOPERM b"}, 0,
			[]found{{ErrUnverified, Critical}}, "ERR a; NOPERM b"},
		{"a replica's own replicas are not judged", reading{info: info("role", "slave", "connected_slaves", "0"), config: durable}, 1, nil, ""},
		{"connected_slaves unreadable", reading{info: info("connected_slaves", "many"), config: durable}, 0, nil, ""},
		{"RDB only counts the changes since the snapshot", reading{info: info("aof_enabled", "0", "rdb_changes_since_last_save", "42"),
			config: map[string]string{"save": "3600 1", "appendfsync": "always"}}, 0,
			[]found{{ErrWeakPersistence, Warning}}, "42 changes"},
		{"two replicas, WaitReplicas 0", reading{info: info("connected_slaves", "2"), config: durable}, 0,
			[]found{{ErrAsyncReplicas, Warning}}, "connected_slaves 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := bySeverity(tt.r.assess("10.0.0.1:6379", tt.wait))
			var got []found
			for _, f := range fs {
				got = append(got, found{f.Err, f.Severity})
				assert.Equal(t, "10.0.0.1:6379", f.Addr)
				assert.True(t, strings.HasPrefix(f.Error(), "redisstore: 10.0.0.1:6379: "), f.Error())
				assert.NotEmpty(t, f.Risk)
				assert.NotEmpty(t, f.Fix)
			}
			require.Equal(t, tt.want, got)
			if tt.setting != "" {
				assert.Contains(t, fs[0].Setting, tt.setting)
			}
		})
	}
}

// TestFindingIsItsKind: a Finding is an error wrapping its kind, found by
// errors.Is and errors.As through a join, as Check returns them.
func TestFindingIsItsKind(t *testing.T) {
	t.Parallel()
	f := Finding{Err: ErrNoPersistence, Severity: Warning, Setting: "s", Risk: "r", Fix: "f"}
	joined := errors.Join(errors.New("other"), f)
	require.ErrorIs(t, joined, ErrNoPersistence)
	assert.NotErrorIs(t, joined, ErrEvictionPolicy)
	var got Finding
	require.ErrorAs(t, joined, &got)
	assert.Equal(t, f, got)
	assert.Equal(t, "redisstore: s: r; fix: f", f.Error())
	assert.Equal(t, "notice warning critical Severity(0)",
		strings.Join([]string{Notice.String(), Warning.String(), Critical.String(), Severity(0).String()}, " "))
}

// FuzzInfoFields: the INFO parser never panics, and every field it returns
// is a "name:value" line of the text.
func FuzzInfoFields(f *testing.F) {
	f.Add("# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n")
	f.Add("# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=7104,state=online,offset=1,lag=0\r\n")
	f.Add("no colon\n:empty name\nk:v:w\n\n#x:y")
	f.Fuzz(func(t *testing.T, text string) {
		got := map[string]string{}
		infoFields(text, got)
		for name, value := range got {
			if name == "" || strings.ContainsAny(name, ":\n") || name[0] == '#' {
				t.Fatalf("field name %q", name)
			}
			line := name + ":" + value
			if !strings.Contains(text, line) {
				t.Fatalf("%q is no line of %q", line, text)
			}
		}
	})
}
