package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMachine is a machine with two Debian clusters, one that sets its
// data directory and one that keeps the default, a data directory made by
// initdb and owned by uid 1001 ("pgtest"), and the Debian clusters' owned
// by uid 110 ("postgres"). It runs as euid.
func fakeMachine(t *testing.T, euid int) machine {
	t.Helper()
	conf := t.TempDir()
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(filepath.Join(conf, "15", "main", "postgresql.conf"),
		"#data_directory = '/nowhere'\ndata_directory = '/srv/pg/15/main'\t\t# use data in another directory\nport = 5432\n")
	write(filepath.Join(conf, "16", "reports", "postgresql.conf"), "port = 5433 # no data_directory: the default\n")
	owners := map[string]int{"/srv/pg/15/main": 110, "/var/lib/postgresql/16/reports": 110, "/tmp/pgtest/data": 1001}
	names := map[int]string{110: "postgres", 1001: "pgtest"}
	ports := map[string]int{"/srv/pg/15/main": 5432, "/var/lib/postgresql/16/reports": 5433, "/tmp/pgtest/data": 55432}
	return machine{
		euid:     euid,
		confRoot: conf,
		libRoot:  "/usr/lib/postgresql",
		localAddrs: func() ([]net.Addr, error) {
			return []net.Addr{&net.IPNet{IP: net.ParseIP("192.0.2.10"), Mask: net.CIDRMask(24, 32)}}, nil
		},
		lookupHost: func(host string) ([]string, error) {
			switch host {
			case "localhost":
				return []string{"127.0.0.1", "::1"}, nil
			case "db.here":
				return []string{"192.0.2.10"}, nil
			case "db.there":
				return []string{"198.51.100.7"}, nil
			}
			return nil, errors.New("no such host")
		},
		owner: func(path string) (int, string, error) {
			uid, ok := owners[path]
			if !ok {
				return 0, "", &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
			}
			return uid, names[uid], nil
		},
		pidPort: func(dir string) (int, error) { return ports[dir], nil },
	}
}

func TestPlanRestart(t *testing.T) {
	t.Parallel()
	debian15 := server{dataDir: "/srv/pg/15/main", port: 5432, version: 150020}
	debian16 := server{dataDir: "/var/lib/postgresql/16/reports", port: 5433, version: 160004}
	own := server{dataDir: "/tmp/pgtest/data", port: 55432, version: 150020}
	pgCtl := "/usr/lib/postgresql/15/bin/pg_ctl restart -D /tmp/pgtest/data -m fast -w -t 120 -l "
	for _, tc := range []struct {
		name    string
		euid    int
		systemd bool
		host    string
		port    int
		srv     server
		argv    string // the command, up to the log file
		err     error
	}{
		{"Debian cluster, its data_directory set", 0, false, "127.0.0.1", 5432, debian15,
			"pg_ctlcluster --skip-systemctl-redirect 15 main restart", nil},
		{"Debian cluster, the default data directory", 0, false, "localhost", 5433, debian16,
			"pg_ctlcluster --skip-systemctl-redirect 16 reports restart", nil},
		{"Debian cluster under systemd", 0, true, "/var/run/postgresql", 5432, debian15,
			"pg_ctlcluster 15 main restart", nil},
		{"Debian cluster, as its owner", 110, false, "::1", 5432, debian15,
			"pg_ctlcluster --skip-systemctl-redirect 15 main restart", nil},
		{"initdb cluster, as its owner", 1001, false, "127.0.0.1", 55432, own, pgCtl, nil},
		{"initdb cluster, as root", 0, false, "db.here", 55432, own, "runuser -u pgtest -- " + pgCtl, nil},
		{"initdb cluster, as another user", 1002, false, "127.0.0.1", 55432, own, "", errNotOwner},
		{"remote address", 0, false, "198.51.100.7", 5432, debian15, "", errRemote},
		{"remote name", 0, false, "db.there", 5432, debian15, "", errRemote},
		{"unknown name", 0, false, "db.nowhere", 5432, debian15, "", errRemote},
		{"through a pooler", 0, false, "127.0.0.1", 6432, debian15, "", errPort},
		{"data directory elsewhere", 0, false, "127.0.0.1", 5432,
			server{dataDir: "/var/lib/postgresql/data", port: 5432, version: 170000}, "", errNoDir},
		{"data directory of another server", 0, false, "127.0.0.1", 5433,
			server{dataDir: "/srv/pg/15/main", port: 5433, version: 150020}, "", errOtherDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakeMachine(t, tc.euid)
			m.systemd = tc.systemd
			r, err := plan(m, tc.host, tc.port, tc.srv)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(strings.Join(r.argv, " "), tc.argv), "%q", r.argv)
			assert.Contains(t, r.what, tc.srv.dataDir)
		})
	}
}

func TestConfSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, want string
		set              bool
	}{
		{"quoted, with a comment", "data_directory = '/a/b'\t# here\n", "/a/b", true},
		{"unquoted, with a comment", "data_directory=/a/b # here\n", "/a/b", true},
		{"a quote inside", "data_directory = '/a/it''s'\n", "/a/it's", true},
		{"commented out", "#data_directory = '/a/b'\n", "", false},
		{"the last one wins", "data_directory = '/a'\ndata_directory = '/b'\n", "/b", true},
		{"another setting", "data_directory_mode = 0700\nport = 5432\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "postgresql.conf")
			require.NoError(t, os.WriteFile(file, []byte(tc.text), 0o644))
			got, set := confSetting(file, "data_directory")
			assert.Equal(t, tc.set, set)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIsLocal(t *testing.T) {
	t.Parallel()
	m := fakeMachine(t, 0)
	for host, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "localhost": true, "/tmp": true,
		"192.0.2.10": true, "db.here": true, "198.51.100.7": false, "db.there": false,
	} {
		got, err := m.isLocal(host)
		require.NoError(t, err, host)
		assert.Equal(t, want, got, host)
	}
}

// TestPlanRestartOfTheTestDatabase plans, and only plans, the restart of
// the server IDEM_TEST_DATABASE names: a plan that names its data
// directory, or a refusal that says why.
func TestPlanRestartOfTheTestDatabase(t *testing.T) {
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		t.Skip("IDEM_TEST_DATABASE not set")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	var dataDir string
	require.NoError(t, pool.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir))
	r, err := planRestart(ctx, pool, dsn, thisMachine())
	if err != nil {
		t.Logf("refused: %v", err)
		for _, why := range []error{errAmbiguous, errNoSQL, errRemote, errPort, errNoDir, errNotOwner, errOtherDir} {
			if errors.Is(err, why) {
				return
			}
		}
		t.Fatalf("not a refusal: %v", err)
	}
	t.Logf("plan: %s: %q", r.what, r.argv)
	assert.Contains(t, r.what, dataDir)
}
