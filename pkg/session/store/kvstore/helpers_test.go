package kvstore

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// TestMain doubles as the entry point of child processes (crash and
// concurrency tests re-run the test binary with WC_STORE_TEST_CHILD set).
func TestMain(m *testing.M) {
	if role := os.Getenv("WC_STORE_TEST_CHILD"); role != "" {
		if err := runChild(role, os.Getenv("WC_STORE_TEST_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testID returns a valid canonical id whose first 8 hex digits are head.
func testID(head uint32, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", head, n)
}

func userMsg(text string) session.Message {
	return session.Message{Role: session.RoleUser, Content: session.TextContent(text)}
}

// chain builds n nodes 1..n, each the child of the one before, with texts of
// about size bytes.
func chain(n, size int) []session.Node {
	nodes := make([]session.Node, n)
	pad := strings.Repeat("x", max(0, size-16))
	for i := range nodes {
		var parent *session.Node
		if i > 0 {
			parent = &nodes[i-1]
		}
		nodes[i] = session.Child(parent, uint64(i+1), userMsg(fmt.Sprintf("m%d %s", i+1, pad)))
	}
	return nodes
}

// metaFor describes a session whose head is the last node.
func metaFor(id string, nodes []session.Node) session.Meta {
	m := session.Meta{
		ID: id, Title: "title " + id[:8], TitleSource: session.TitleManual,
		CreatedAt: "2026-01-02T03:04:05Z", UpdatedAt: "2026-01-02T03:04:05Z", NextSeq: 1,
	}
	if len(nodes) > 0 {
		last := nodes[len(nodes)-1]
		m.Head, m.NextSeq = last.Seq, last.Seq+1
		m.MessageCount, m.UserMessageCount, m.Tokens = last.Depth, last.Users, last.Tokens
	}
	return m
}

func open(t testing.TB, dir string, mode Mode) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, LockTimeout: 10 * time.Second}, mode)
	if err != nil {
		t.Fatalf("open %v: %v", mode, err)
	}
	return s
}

func mustClose(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// create writes sessions in one writer process-equivalent and closes.
func create(t testing.TB, dir string, sessions map[string][]session.Node) {
	t.Helper()
	s := open(t, dir, Write)
	for id, nodes := range sessions {
		m := metaFor(id, nodes)
		if err := s.Commit(&m, nodes); err != nil {
			t.Fatalf("commit %s: %v", id, err)
		}
	}
	mustClose(t, s)
}

// appendOne appends a user message at the head of session id, as wc-append
// does: read the metadata and the head node, write one node and the
// metadata. s is a store opened here or a client of a resident process.
func appendOne(s Handle, id, text string) error {
	m, err := s.Meta(id)
	if err != nil {
		return err
	}
	var parent *session.Node
	if m.Head != 0 {
		head, err := s.Node(id, m.Head)
		if err != nil {
			return err
		}
		parent = &head
	}
	n := session.Child(parent, m.NextSeq, userMsg(text))
	m.Head, m.NextSeq = n.Seq, n.Seq+1
	m.MessageCount, m.UserMessageCount, m.Tokens = n.Depth, n.Users, n.Tokens
	return s.Commit(&m, []session.Node{n})
}

func pathSeqsOf(t testing.TB, s *Store, id string, head uint64) []uint64 {
	t.Helper()
	return storetest.PathSeqs(t, s, id, head)
}

// dialStore connects to the resident process of the store in opts.Dir.
func dialStore(opts Options, mode Mode, refs ...string) (*remote.Client, error) {
	return remote.Dial(opts.Dir, remote.Ask{Mode: mode, LockTimeout: opts.LockTimeout, Refs: refs})
}

// dialListing connects with listing q sent in the hello.
func dialListing(opts Options, q ListQuery) (*remote.Client, error) {
	return remote.Dial(opts.Dir, remote.Ask{Mode: Read, LockTimeout: opts.LockTimeout, Listing: &q})
}

// served is cfg with the socket a resident process makes (wc-store's own
// listener, in cmd/internal/serve, also reaches the directory through its
// descriptor).
func served(cfg ServeConfig) ServeConfig {
	cfg.Listen = func(path string) (net.Listener, error) {
		ln, err := net.Listen("unix", path)
		if err == nil {
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
		}
		return ln, err
	}
	return cfg
}
