// Package cluster runs an etcd cluster inside the process, for etcdstore's
// tests, benchmarks and failover command: members on loopback ports picked
// free, data under one directory, and a member can be killed (stopped
// without a word to its peers, as a crash would) and restarted on its own
// data.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// MaxRequestBytes is the members' --max-request-bytes: room for a record
// of 4 MiB (storetest stores a 2 MiB body).
const MaxRequestBytes = 8 << 20

// startTimeout bounds how long a member takes to start or rejoin.
const startTimeout = 30 * time.Second

// Options configures a Cluster; the zero value is etcd's defaults.
type Options struct {
	// NoFsync starts the members with --unsafe-no-fsync: for tests of
	// behaviour, which do not need their records to survive a crash of
	// the machine and run faster without waiting for the disk. Durability
	// drills and benchmarks keep fsync.
	NoFsync bool
}

// Cluster is an etcd cluster of members in this process. Its methods are
// safe for concurrent use.
type Cluster struct {
	opts    Options
	token   string
	initial string

	mu      sync.Mutex
	members []*member
}

// member is one member of a Cluster.
type member struct {
	Name      string
	ClientURL string
	peerURL   string
	dir       string
	etcd      *embed.Etcd // nil while killed
}

// Start starts a cluster of n members whose data lives under dir, and
// returns once every member serves clients. The members keep etcd's
// default timing (100 ms heartbeats, 1 s election timeout) and, unless
// opts.NoFsync, fsync every write.
func Start(dir string, n int, opts Options) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, token: fmt.Sprintf("idem-%d", time.Now().UnixNano())}
	var initial []string
	for i := range n {
		m := &member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		m.dir = filepath.Join(dir, m.Name)
		c.members = append(c.members, m)
		initial = append(initial, m.Name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { errs[i] = c.start(m) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: no free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start starts m (anew, or again on its data) and waits until it serves.
func (c *Cluster) start(m *member) error {
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.dir
	peer, _ := url.Parse(m.peerURL)
	client, _ := url.Parse(m.ClientURL)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = c.token
	cfg.MaxRequestBytes = MaxRequestBytes
	cfg.UnsafeNoFsync = c.opts.NoFsync
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("cluster: start %s: %w", m.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("cluster: %s failed: %w", m.Name, err)
	case <-time.After(startTimeout):
		e.Close()
		return fmt.Errorf("cluster: %s not ready within %v", m.Name, startTimeout)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// Len returns the number of members, killed ones included.
func (c *Cluster) Len() int { return len(c.members) }

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.ClientURL)
	}
	return out
}

// Client returns a client of every member, which may send requests of up
// to MaxRequestBytes. The caller closes it.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return NewClient(c.Endpoints())
}

// NewClient returns a client of the given endpoints, as the tests use it
// (also against a cluster of its own: IDEM_TEST_ETCD).
func NewClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: MaxRequestBytes,
		Logger:             zap.NewNop(),
	})
}

// Kill stops member i at once, without handing its leadership over or
// telling its peers (its raft loop stops first), then closes its
// listeners. Its data stays for Restart.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	m := c.members[i]
	e := m.etcd
	m.etcd = nil
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.Server.HardStop()
	e.Close()
}

// Restart starts the killed member i again on its data, and returns once
// it serves clients.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	m := c.members[i]
	running := m.etcd != nil
	c.mu.Unlock()
	if running {
		return nil
	}
	return c.start(m)
}

// Status is what the members themselves say about the cluster.
type Status struct {
	// Leader is the index of the member the live members agree leads,
	// or -1 if they do not agree or none leads.
	Leader int
	// Term is the highest raft term a live member reports.
	Term uint64
	// Answered is how many members answered.
	Answered int
}

// Status asks every live member for its status (the Maintenance Status
// call, each on its own endpoint) and returns what they report. Members
// that do not answer within the context are left out; a leader counts
// only if every member that answered names it.
func (c *Cluster) Status(ctx context.Context, cli *clientv3.Client) Status {
	st := Status{Leader: -1}
	ids := map[uint64]int{}
	var urls []string
	c.mu.Lock()
	for i, m := range c.members {
		if m.etcd != nil {
			ids[uint64(m.etcd.Server.MemberID())] = i
			urls = append(urls, m.ClientURL)
		}
	}
	c.mu.Unlock()
	agreed, answered := uint64(0), 0
	for _, u := range urls {
		r, err := cli.Status(ctx, u)
		if err != nil {
			continue
		}
		answered++
		st.Term = max(st.Term, r.RaftTerm)
		switch {
		case answered == 1:
			agreed = r.Leader
		case agreed != r.Leader:
			agreed = 0
		}
	}
	st.Answered = answered
	if i, ok := ids[agreed]; ok && agreed != 0 && answered > 0 {
		st.Leader = i
	}
	return st
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Kill(i)
	}
}
