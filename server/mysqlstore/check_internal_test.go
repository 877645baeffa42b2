package mysqlstore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAssess: each setting that voids part of the promise yields its
// finding, with its severity by mode, and a sound server yields none.
func TestAssess(t *testing.T) {
	t.Parallel()
	sound := func() reading {
		return reading{
			global: map[string]string{
				"innodb_flush_log_at_trx_commit": "1", "log_bin": "OFF", "sync_binlog": "0", "binlog_format": "MIXED",
			},
			session: map[string]string{"tx_isolation": "REPEATABLE-READ"},
			engine:  "InnoDB",
		}
	}
	type want struct {
		err      error
		severity Severity
	}
	cases := []struct {
		name          string
		change        func(r *reading)
		transactional bool
		want          []want
	}{
		{"sound", func(*reading) {}, true, nil},
		{"sound, lease", func(*reading) {}, false, nil},
		{"MariaDB's 3 is durable", func(r *reading) { r.global["innodb_flush_log_at_trx_commit"] = "3" }, true, nil},
		{"flush 2", func(r *reading) { r.global["innodb_flush_log_at_trx_commit"] = "2" }, true, []want{{ErrLogFlush, Warning}}},
		{"flush 0", func(r *reading) { r.global["innodb_flush_log_at_trx_commit"] = "0" }, false, []want{{ErrLogFlush, Warning}}},
		{"no InnoDB", func(r *reading) { delete(r.global, "innodb_flush_log_at_trx_commit") }, true, []want{{ErrUnverified, Critical}}},
		{"binlog unsynced", func(r *reading) { r.global["log_bin"] = "ON" }, true, []want{{ErrBinlogSync, Warning}}},
		{"binlog synced", func(r *reading) { r.global["log_bin"], r.global["sync_binlog"] = "ON", "1" }, true, nil},
		{"binlog by statement", func(r *reading) {
			r.global["log_bin"], r.global["sync_binlog"], r.global["binlog_format"] = "ON", "1", "STATEMENT"
		}, true, []want{{ErrBinlogFormat, Notice}}},
		{"read uncommitted", func(r *reading) { r.session["tx_isolation"] = "READ-UNCOMMITTED" }, false, []want{{ErrIsolation, Critical}}},
		{"read uncommitted, MySQL 8's name", func(r *reading) {
			r.session = map[string]string{"transaction_isolation": "READ-UNCOMMITTED"}
		}, true, []want{{ErrIsolation, Critical}}},
		{"serializable", func(r *reading) { r.session["tx_isolation"] = "SERIALIZABLE" }, true, nil},
		{"isolation not reported", func(r *reading) { r.session = map[string]string{} }, true, []want{{ErrUnverified, Notice}}},
		{"MyISAM", func(r *reading) { r.engine = "MyISAM" }, false, []want{{ErrNotInnoDB, Critical}}},
		{"no table yet", func(r *reading) { r.engine = "" }, true, nil},
		{"Galera, transactional", func(r *reading) { r.global["wsrep_on"] = "ON" }, true, []want{{ErrGalera, Critical}}},
		{"Galera, lease, no sync wait", func(r *reading) { r.global["wsrep_on"], r.global["wsrep_sync_wait"] = "ON", "0" }, false, []want{{ErrGalera, Notice}}},
		{"Galera, lease, sync wait", func(r *reading) { r.global["wsrep_on"], r.global["wsrep_sync_wait"] = "ON", "1" }, false, nil},
		{"multi-primary group", func(r *reading) {
			r.global["group_replication_group_name"], r.global["group_replication_single_primary_mode"] = "aaaa-bbbb", "OFF"
		}, true, []want{{ErrGroupReplication, Warning}}},
		{"single-primary group", func(r *reading) {
			r.global["group_replication_group_name"], r.global["group_replication_single_primary_mode"] = "aaaa-bbbb", "ON"
		}, true, nil},
		{"most severe first", func(r *reading) {
			r.global["innodb_flush_log_at_trx_commit"], r.engine = "2", "MyISAM"
		}, true, []want{{ErrNotInnoDB, Critical}, {ErrLogFlush, Warning}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sound()
			c.change(&r)
			got := r.assess(c.transactional)
			if !assert.Len(t, got, len(c.want), "%v", got) {
				return
			}
			for i, w := range c.want {
				assert.ErrorIs(t, got[i], w.err)
				assert.Equal(t, w.severity, got[i].Severity)
				assert.NotEmpty(t, got[i].Setting)
				assert.NotEmpty(t, got[i].Risk)
				assert.NotEmpty(t, got[i].Fix)
				var f Finding
				assert.True(t, errors.As(got[i], &f))
			}
		})
	}
}
