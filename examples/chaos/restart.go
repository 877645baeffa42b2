package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A restart is how the harness restarts the PostgreSQL server its -database
// DSN points at, worked out before the run starts, so that a harness that
// cannot restart that server says so at once instead of after the run, and
// never restarts another one.
//
// The server is found from the DSN and from what the server says about
// itself: its host must be this machine (a Unix socket, a loopback address
// or one of this machine's addresses); SHOW data_directory must name a
// directory on this machine whose postmaster.pid shows the DSN's port. If
// that directory is a Debian cluster's (a data_directory in
// /etc/postgresql/<version>/<name>/postgresql.conf, or that cluster's
// default /var/lib/postgresql/<version>/<name>), it is restarted with
// pg_ctlcluster; otherwise with the server's own version of pg_ctl, as the
// data directory's owner (through runuser when the harness runs as root).
// -restart-cmd replaces all of this with a shell command of the user's.
type restart struct {
	// argv is the command. It runs in a session of its own, so that an
	// interrupt of the harness does not reach the server it starts.
	argv []string
	// what says what will be restarted and how, for the log.
	what string
}

// Why the harness will not restart a server itself. Each error it
// returns wraps one of them and says what it found; -restart-cmd is the
// way around every one.
var (
	errAmbiguous = errors.New("the DSN names more than one server")
	errNoSQL     = errors.New("the server does not say where its data directory is")
	errRemote    = errors.New("the database is not on this machine")
	errPort      = errors.New("the DSN's port is not the server's")
	errNoDir     = errors.New("the server's data directory is not on this machine")
	errNotOwner  = errors.New("the data directory belongs to another user")
	errOtherDir  = errors.New("the data directory on this machine is another server's")
)

// refuse returns an error wrapping why, with what was found, and the way
// around it.
func refuse(why error, format string, args ...any) error {
	return fmt.Errorf("%w: %s; pass -restart-cmd to restart it another way", why, fmt.Sprintf(format, args...))
}

// server is what the harness learns from the server itself.
type server struct {
	dataDir string
	port    int
	version int // server_version_num, e.g. 150020
}

// machine is what the harness learns about this machine. Tests replace
// its fields.
type machine struct {
	euid       int
	confRoot   string // Debian's cluster configurations: /etc/postgresql
	libRoot    string // PostgreSQL's versioned binaries: /usr/lib/postgresql
	localAddrs func() ([]net.Addr, error)
	lookupHost func(string) ([]string, error)
	// owner returns the uid and user name that own path.
	owner func(path string) (uid int, name string, err error)
	// pidPort returns the port in a data directory's postmaster.pid.
	pidPort func(dataDir string) (int, error)
	// systemd reports whether systemd runs this machine, where Debian's
	// pg_ctlcluster hands restarts to it.
	systemd bool
}

func thisMachine() machine {
	_, err := os.Stat("/run/systemd/system")
	return machine{
		euid:       os.Geteuid(),
		confRoot:   "/etc/postgresql",
		libRoot:    "/usr/lib/postgresql",
		localAddrs: net.InterfaceAddrs,
		lookupHost: net.LookupHost,
		owner:      fileOwner,
		pidPort:    postmasterPort,
		systemd:    err == nil,
	}
}

// shellRestart is the -restart-cmd restart: the user's command, as given.
func shellRestart(cmd string) restart {
	return restart{argv: []string{"/bin/sh", "-c", cmd}, what: "the database with -restart-cmd"}
}

// planRestart works out how to restart the server dsn points at, asking
// the server through pool for its data directory, port and version.
func planRestart(ctx context.Context, pool *pgxpool.Pool, dsn string, m machine) (restart, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return restart{}, err
	}
	for _, fb := range cfg.Fallbacks {
		if fb.Host != cfg.Host || fb.Port != cfg.Port {
			return restart{}, refuse(errAmbiguous, "%s:%d and %s:%d", cfg.Host, cfg.Port, fb.Host, fb.Port)
		}
	}
	if local, err := m.isLocal(cfg.Host); err != nil || !local {
		return restart{}, cmp.Or(err, refuse(errRemote, "its host is %s", cfg.Host))
	}
	var s server
	err = pool.QueryRow(ctx, `SELECT current_setting('data_directory'),
		current_setting('port')::int, current_setting('server_version_num')::int`).Scan(&s.dataDir, &s.port, &s.version)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		return restart{}, refuse(errNoSQL, "reading data_directory needs a superuser or pg_read_all_settings: %s", pgErr.Message)
	} else if err != nil {
		return restart{}, fmt.Errorf("asking the server for its data directory: %v", err)
	}
	return plan(m, cfg.Host, int(cfg.Port), s)
}

// plan decides how to restart server s, reached at host and port, from
// this machine m.
func plan(m machine, host string, port int, s server) (restart, error) {
	local, err := m.isLocal(host)
	if err != nil {
		return restart{}, err
	}
	if !local {
		return restart{}, refuse(errRemote, "its host is %s", host)
	}
	if port != s.port {
		return restart{}, refuse(errPort, "the DSN connects to port %d, the server listens on %d (a pooler or a forwarded port?)", port, s.port)
	}
	uid, name, err := m.owner(s.dataDir)
	if err != nil {
		return restart{}, refuse(errNoDir, "%v (a container?)", err)
	}
	if uid != m.euid && m.euid != 0 {
		return restart{}, refuse(errNotOwner, "%s belongs to %s: run the harness as %s or as root", s.dataDir, name, name)
	}
	pidPort, err := m.pidPort(s.dataDir)
	if err != nil {
		return restart{}, refuse(errOtherDir, "%v", err)
	}
	if pidPort != s.port {
		return restart{}, refuse(errOtherDir, "%s holds a server on port %d, not %d", s.dataDir, pidPort, s.port)
	}
	if version, cluster, ok := debianCluster(m.confRoot, s.dataDir); ok {
		argv := []string{"pg_ctlcluster", version, cluster, "restart"}
		if !m.systemd { // no systemd to hand the restart to
			argv = []string{"pg_ctlcluster", "--skip-systemctl-redirect", version, cluster, "restart"}
		}
		return restart{argv: argv, what: fmt.Sprintf("the Debian cluster %s/%s (%s, port %d)", version, cluster, s.dataDir, s.port)}, nil
	}
	pgCtl := filepath.Join(m.libRoot, strconv.Itoa(s.version/10000), "bin", "pg_ctl")
	logFile := filepath.Join(os.TempDir(), fmt.Sprintf("idem-chaos-postgres-%d.log", s.port))
	argv := []string{pgCtl, "restart", "-D", s.dataDir, "-m", "fast", "-w", "-t", "120", "-l", logFile}
	if uid != m.euid { // root, on behalf of the owner: PostgreSQL refuses to run as root
		argv = append([]string{"runuser", "-u", name, "--"}, argv...)
	}
	return restart{argv: argv, what: fmt.Sprintf("the server in %s (port %d, owner %s; its log goes to %s)", s.dataDir, s.port, name, logFile)}, nil
}

// isLocal reports whether host is this machine: a Unix socket directory,
// or a name or address every one of whose addresses is a loopback address
// or one of this machine's.
func (m machine) isLocal(host string) (bool, error) {
	if strings.HasPrefix(host, "/") {
		return true, nil
	}
	addrs := []string{host}
	if net.ParseIP(host) == nil {
		var err error
		if addrs, err = m.lookupHost(host); err != nil {
			return false, refuse(errRemote, "resolving its host %s: %v", host, err)
		}
	}
	own, err := m.localAddrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			return false, nil
		}
		if !ip.IsLoopback() && !hasIP(own, ip) {
			return false, nil
		}
	}
	return len(addrs) > 0, nil
}

func hasIP(addrs []net.Addr, ip net.IP) bool {
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// debianCluster finds the Debian cluster (confRoot/<version>/<name>) whose
// data directory is dataDir: the data_directory its postgresql.conf sets,
// or the cluster's default, /var/lib/postgresql/<version>/<name>.
func debianCluster(confRoot, dataDir string) (version, name string, ok bool) {
	confs, _ := filepath.Glob(filepath.Join(confRoot, "*", "*", "postgresql.conf"))
	for _, conf := range confs {
		dir := filepath.Dir(conf)
		version, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		d, set := confSetting(conf, "data_directory")
		if !set {
			d = filepath.Join("/var/lib/postgresql", version, name)
		}
		if samePath(d, dataDir) {
			return version, name, true
		}
	}
	return "", "", false
}

// confSetting returns the last value postgresql.conf file gives to key (as
// PostgreSQL, the last one wins), unquoted, ignoring comments. Includes
// are not followed.
func confSetting(file, key string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var value string
	var set bool
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		k, v, ok := strings.Cut(lines.Text(), "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "'") { // a quoted value; '' is a quote inside it
			var b strings.Builder
			for i := 1; i < len(v); i++ {
				if v[i] == '\'' {
					if i+1 < len(v) && v[i+1] == '\'' {
						b.WriteByte('\'')
						i++
						continue
					}
					break
				}
				b.WriteByte(v[i])
			}
			v = b.String()
		} else if before, _, found := strings.Cut(v, "#"); found {
			v = strings.TrimSpace(before)
		}
		value, set = v, true
	}
	return value, set
}

// samePath reports whether a and b name one directory, through symbolic
// links where they can be resolved.
func samePath(a, b string) bool {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	return resolve(a) == resolve(b)
}

func fileOwner(path string) (int, string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, "", errors.New("no owner on this system")
	}
	uid := int(st.Uid)
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return uid, name, nil
}

// postmasterPort reads the port, the fourth line of postmaster.pid.
func postmasterPort(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, errors.New("postmaster.pid is too short")
	}
	return strconv.Atoi(strings.TrimSpace(lines[3]))
}

// run restarts the server and waits until pool reaches a new postmaster:
// one whose start time is later than before. It returns how long the
// database was away.
func (r restart) run(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	var before time.Time
	if err := pool.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&before); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // a server left holding the output does not hold the harness
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", strings.Join(r.argv, " "), err, strings.TrimSpace(out.String()))
	}
	for {
		var after time.Time
		err := pool.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&after)
		switch {
		case err == nil && after.After(before):
			return time.Since(start), nil
		case err == nil:
			return 0, fmt.Errorf("%s ran, but the server the DSN names was not restarted (started at %s, as before)", strings.Join(r.argv, " "), after.Format(time.RFC3339Nano))
		case ctx.Err() != nil:
			return 0, fmt.Errorf("the server did not come back: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // bounded by ctx
	}
}
