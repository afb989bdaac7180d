package reliability

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// lockTimeout is generous on purpose: a command that gives up on the lock is
// a failure in these suites, and the machine may be shared.
const lockTimeout = "10m"

// runner runs the wc binaries against one store, with a HOME and TMPDIR of
// their own so that nothing leaks into the real ones.
type runner struct {
	t     testing.TB
	bin   string
	store string
	wd    string // where commands run: the project of wc-new
	env   []string
	cred  *syscall.Credential // run the commands as another user (see asUser)
}

func newRunner(t testing.TB, storeDir string) *runner {
	t.Helper()
	bin := tooltest.Binaries(t)
	base := filepath.Dir(storeDir)
	home := filepath.Join(base, "home")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "WC_") || k == "XDG_DATA_HOME" || k == "HOME" || k == "TMPDIR" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WC_STORE="+storeDir,
		"WC_LOCK_TIMEOUT="+lockTimeout,
		"HOME="+home,
		"TMPDIR="+tmp,
	)
	// Resident store processes the commands started must not outlive the
	// test and its temporary directory.
	t.Cleanup(func() {
		for _, pid := range residentPIDsUnder(base) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return &runner{t: t, bin: bin, store: storeDir, wd: base, env: env}
}

// direct is a runner whose commands open the store themselves instead of
// going through a resident store process (WC_DIRECT=1).
func (r *runner) direct() *runner { return r.withEnv("WC_DIRECT=1", "WC_RESIDENT=") }

// resident is a runner whose commands go through the resident store
// process, started on demand, that keeps the store open between commands
// (the default; cmd/internal/command).
func (r *runner) resident() *runner { return r.withEnv("WC_RESIDENT=", "WC_DIRECT=") }

func (r *runner) withEnv(kv ...string) *runner {
	c := *r
	c.env = append(slices.Clone(r.env), kv...) // the last one wins
	return &c
}

// withStore is a runner on another store (a reference copy).
func (r *runner) withStore(dir string) *runner {
	c := *r
	c.store = dir
	c.env = append(slices.Clone(r.env), "WC_STORE="+dir) // the last one wins
	return &c
}

// result is what one command did.
type result struct {
	Stdout, Stderr string
	Code           int  // exit status; -1 when killed
	Killed         bool // died by our SIGKILL
	Dur            time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d (killed %v) after %v\nstdout: %.2000s\nstderr: %s", r.Code, r.Killed, r.Dur.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// proc is a started command that may be killed.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	started        time.Time
	timer          *time.Timer
	name           string
	err            error // from Wait
}

// start starts a wc command (name is a binary, or "sh" for a pipeline).
func (r *runner) start(stdin []byte, name string, args ...string) *proc {
	r.t.Helper()
	path := name
	if strings.HasPrefix(name, "wc-") {
		path = filepath.Join(r.bin, name)
	}
	p := &proc{cmd: exec.Command(path, args...), name: name}
	p.cmd.Env = r.env
	p.cmd.Dir = r.wd
	if stdin != nil {
		p.cmd.Stdin = bytes.NewReader(stdin)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A group of its own, so that a kill can take the command's private
	// store process (wc-store, under WC_DIRECT=1) and a pipeline's
	// members with it, as a crash of the machine would.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.cred}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		r.t.Fatalf("start %s: %v", name, err)
	}
	return p
}

// kills counts killAfter's kills: every other one takes the command alone,
// leaving its private store process to notice and close the store (a
// command killed by the OOM killer, or by a parent that kills by pid);
// the others take its whole process group, as a crash would.
var kills atomic.Int64

// killAfter sends SIGKILL after d unless the command has ended by then.
func (p *proc) killAfter(d time.Duration) {
	group := kills.Add(1)%2 == 0
	p.timer = time.AfterFunc(d, func() {
		if group {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		} else {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
	})
}

func (p *proc) wait() result {
	p.err = p.cmd.Wait()
	return p.result()
}

// result is the outcome of a command that has been waited for.
func (p *proc) result() result {
	err := p.err
	if p.timer != nil {
		p.timer.Stop()
	}
	res := result{Stdout: p.stdout.String(), Stderr: p.stderr.String(), Dur: time.Since(p.started)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			res.Killed = true
		}
	default:
		res.Code = -2
		res.Stderr += "\n" + err.Error()
	}
	return res
}

func (r *runner) run(stdin []byte, name string, args ...string) result {
	r.t.Helper()
	return r.start(stdin, name, args...).wait()
}

// must runs a command that has to succeed and returns its stdout.
func (r *runner) must(stdin []byte, name string, args ...string) string {
	r.t.Helper()
	res := r.run(stdin, name, args...)
	if res.Code != 0 {
		r.t.Fatalf("%s %s: %v", name, strings.Join(args, " "), res)
	}
	return res.Stdout
}

// sh runs a shell pipeline with the binaries on PATH.
func (r *runner) sh(script string) result {
	r.t.Helper()
	return r.run(nil, "sh", "-c", script)
}

// jsonLines splits output into complete JSON lines; a last line without its
// newline (a write cut short) is not a printed result.
func jsonLines(out string) ([]gjson.Result, error) {
	var lines []gjson.Result
	for len(out) > 0 {
		i := strings.IndexByte(out, '\n')
		if i < 0 {
			break
		}
		line := out[:i]
		out = out[i+1:]
		if !gjson.Valid(line) {
			return lines, fmt.Errorf("not a JSON line: %.200q", line)
		}
		lines = append(lines, gjson.Parse(line))
	}
	return lines, nil
}

func idOf(out string) string { return gjson.Get(out, "id").Str }

// ---- the store as read back after the commands are dead ----

// nodeRec is one stored node.
type nodeRec struct {
	seq, parent, depth, tokens, users uint64
	raw                               []byte // the message JSON as stored
	msg                               session.Message
}

// sessRec is one session: its metadata and every visible node.
type sessRec struct {
	meta  session.Meta
	nodes map[uint64]*nodeRec
	blobs map[string]bool // sha256 hex of blobs the active path points at, present and intact
}

// size is the bytes of its messages.
func (s *sessRec) size() int {
	n := 0
	for _, nd := range s.nodes {
		n += len(nd.raw)
	}
	return n
}

// state is a whole store.
type state map[string]*sessRec

func (s state) ids() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

var blobRef = regexp.MustCompile(regexp.QuoteMeta(session.BlobRefPrefix) + `([0-9a-f]{64})`)

// readState opens the store read-only in this process (every command must
// have exited) and reads every session, every visible node, and the blobs
// the active paths point at.
func readState(dir string) (state, error) {
	st, err := kvstore.Open(kvstore.Options{Dir: dir, LockTimeout: time.Minute}, kvstore.Read)
	if err != nil {
		return nil, fmt.Errorf("open read-only: %w", err)
	}
	defer st.Close()
	var metas []session.Meta
	if err := st.List(func(m *session.Meta) error { metas = append(metas, *m); return nil }); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	// wc-ls reads the listing, kept in the metadata's transactions:
	// no kill may leave it disagreeing with the metadata.
	if err := st.CheckListing(); err != nil {
		return nil, err
	}
	out := state{}
	for _, m := range metas {
		s := &sessRec{meta: m, nodes: map[uint64]*nodeRec{}, blobs: map[string]bool{}}
		err := st.Nodes(m.ID, func(seq uint64, raw []byte) error {
			h, msgRaw, err := record.DecodeNodeHeader(raw)
			if err != nil {
				return fmt.Errorf("node %d: %w", seq, err)
			}
			n, err := record.DecodeNode(seq, raw)
			if err != nil {
				return fmt.Errorf("node %d: %w", seq, err)
			}
			s.nodes[seq] = &nodeRec{seq: seq, parent: h.Parent, depth: h.Depth, tokens: h.Tokens, users: h.Users,
				raw: bytes.Clone(msgRaw), msg: n.Msg}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("session %s: nodes: %w", m.ID, err)
		}
		if path, err := s.path(m.Head); err == nil {
			for _, n := range path {
				for _, sm := range blobRef.FindAllSubmatch(n.raw, -1) {
					sum := string(sm[1])
					var key [32]byte
					b, _ := hex.DecodeString(sum)
					copy(key[:], b)
					data, err := st.Blob(m.ID, key)
					s.blobs[sum] = err == nil && sha256.Sum256(data) == key
				}
			}
		}
		out[m.ID] = s
	}
	return out, nil
}

// path is the chain root..head.
func (s *sessRec) path(head uint64) ([]*nodeRec, error) {
	var rev []*nodeRec
	for seq := head; seq != 0; {
		n, ok := s.nodes[seq]
		if !ok {
			return nil, fmt.Errorf("node %d on the path to %d is missing", seq, head)
		}
		if n.parent >= seq {
			return nil, fmt.Errorf("node %d has parent %d, not below it", seq, n.parent)
		}
		rev = append(rev, n)
		seq = n.parent
	}
	slices.Reverse(rev)
	return rev, nil
}

// check is the consistency of one session: the head and every named branch
// exist, every parent exists below its child, every node's running totals
// are right, the metadata counts match a recount of the active path, and
// every blob the active path points at is there, byte for byte.
func (s *sessRec) check() []error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("session %s: "+f, append([]any{s.meta.ID}, a...)...))
	}
	m := &s.meta
	if m.Head >= m.NextSeq && !(m.Head == 0 && m.NextSeq == 0) {
		bad("head %d is not below next_seq %d", m.Head, m.NextSeq)
	}
	for _, seq := range slices.Sorted(mapKeys(s.nodes)) {
		n := s.nodes[seq]
		want := nodeRec{depth: 1, tokens: session.MessageTokens(&n.msg)}
		if n.msg.Role == session.RoleUser {
			want.users = 1
		}
		if n.parent != 0 {
			p, ok := s.nodes[n.parent]
			if !ok || n.parent >= seq {
				bad("node %d: parent %d does not exist below it", seq, n.parent)
				continue
			}
			want.depth += p.depth
			want.tokens += p.tokens
			want.users += p.users
		}
		if n.depth != want.depth || n.tokens != want.tokens || n.users != want.users {
			bad("node %d: totals n=%d tok=%d users=%d, recount n=%d tok=%d users=%d", seq, n.depth, n.tokens, n.users, want.depth, want.tokens, want.users)
		}
	}
	path, err := s.path(m.Head)
	if err != nil {
		bad("head %d is not reachable: %v", m.Head, err)
		return errs
	}
	var users, tokens uint64
	for _, n := range path {
		if n.msg.Role == session.RoleUser {
			users++
		}
		tokens += session.MessageTokens(&n.msg)
	}
	sys := session.EstimateTokens(m.SystemPrompt)
	if m.SystemTokens != sys {
		bad("system_tokens %d, recount %d", m.SystemTokens, sys)
	}
	if m.MessageCount != uint64(len(path)) || m.UserMessageCount != users || m.Tokens != sys+tokens {
		bad("metadata says message_count=%d user_message_count=%d tokens=%d; the active path recounts to %d, %d, %d",
			m.MessageCount, m.UserMessageCount, m.Tokens, len(path), users, sys+tokens)
	}
	for _, b := range m.Branches {
		if _, ok := s.nodes[b.Seq]; !ok {
			bad("branch %q points at missing node %d", b.Name, b.Seq)
		}
	}
	for sum, ok := range s.blobs {
		if !ok {
			bad("blob %s on the active path is missing or damaged", sum)
		}
	}
	return errs
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkAll checks every session.
func (s state) checkAll() []error {
	var errs []error
	for _, id := range s.ids() {
		errs = append(errs, s[id].check()...)
	}
	return errs
}

// ---- comparing states ----

// normMsg is a message with its top-level created_at dropped: commands stamp
// what they create (summaries) with the time they ran.
func normMsg(raw []byte) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "unparseable:" + string(raw)
	}
	delete(obj, "created_at")
	b, _ := json.Marshal(obj)
	return string(b)
}

// normMeta drops what differs between two runs of the same command: the
// clock, and for a new session its id.
func normMeta(m session.Meta, newSession bool) session.Meta {
	m.UpdatedAt = ""
	if m.Checkpoint != nil {
		c := *m.Checkpoint
		c.StartedAt = ""
		m.Checkpoint = &c
	}
	if newSession {
		m.ID, m.CreatedAt = "", ""
		if m.TitleSource == session.TitleDefault {
			m.Title = "" // derived from the id
		}
	}
	return m
}

// sameExact: nothing at all changed.
func sameExact(a, b *sessRec) error {
	if d := diffMeta(a.meta, b.meta); d != "" {
		return fmt.Errorf("metadata differs: %s", d)
	}
	return diffNodes(a, b, func(raw []byte) string { return string(raw) })
}

// sameModuloClock: the same session, as the same command run at another time
// would leave it.
func sameModuloClock(a, b *sessRec, newSession bool) error {
	if d := diffMeta(normMeta(a.meta, newSession), normMeta(b.meta, newSession)); d != "" {
		return fmt.Errorf("metadata differs: %s", d)
	}
	return diffNodes(a, b, normMsg)
}

func diffMeta(a, b session.Meta) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if bytes.Equal(ja, jb) && fmt.Sprint(a.Extra) == fmt.Sprint(b.Extra) {
		return ""
	}
	return fmt.Sprintf("\n  %s\n  %s", ja, jb)
}

func diffNodes(a, b *sessRec, norm func([]byte) string) error {
	if len(a.nodes) != len(b.nodes) {
		return fmt.Errorf("%d nodes, want %d", len(a.nodes), len(b.nodes))
	}
	for seq, na := range a.nodes {
		nb, ok := b.nodes[seq]
		if !ok {
			return fmt.Errorf("node %d is not expected", seq)
		}
		if na.parent != nb.parent || norm(na.raw) != norm(nb.raw) {
			return fmt.Errorf("node %d differs:\n  parent %d %.300s\n  parent %d %.300s", seq, na.parent, na.raw, nb.parent, nb.raw)
		}
	}
	return nil
}

// ---- the commands' own view ----

// checkViaCommands reads the store back through the commands: wc-ls must
// list exactly the sessions of st, each row the info of its metadata byte
// for byte, and wc-export --format jsonl must give each active path node
// for node, byte for byte.
func checkViaCommands(r *runner, st state) []error {
	var errs []error
	ls := r.run(nil, "wc-ls")
	if ls.Code != 0 || ls.Stderr != "" {
		return []error{fmt.Errorf("wc-ls after the crash: %v", ls)}
	}
	rows, err := jsonLines(ls.Stdout)
	if err != nil {
		return []error{fmt.Errorf("wc-ls: %v", err)}
	}
	seen := map[string]bool{}
	for _, row := range rows {
		id := row.Get("id").Str
		s, ok := st[id]
		if !ok {
			errs = append(errs, fmt.Errorf("wc-ls lists %s, which the store does not hold", id))
			continue
		}
		seen[id] = true
		m := &s.meta
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m.Info()); err != nil || row.Raw != strings.TrimSuffix(want.String(), "\n") {
			errs = append(errs, fmt.Errorf("wc-ls row %s disagrees with the store's %s", row.Raw, want.String()))
		}
	}
	if len(seen) != len(st) {
		errs = append(errs, fmt.Errorf("wc-ls lists %d sessions, the store holds %d", len(seen), len(st)))
	}
	if len(st) == 0 {
		return errs
	}
	exp := r.run(nil, "wc-export", append([]string{"--format", "jsonl"}, st.ids()...)...)
	if exp.Code != 0 || exp.Stderr != "" {
		return append(errs, fmt.Errorf("wc-export --format jsonl: %v", exp))
	}
	lines, err := jsonLines(exp.Stdout)
	if err != nil {
		return append(errs, fmt.Errorf("wc-export: %v", err))
	}
	byID := map[string][]gjson.Result{}
	for _, l := range lines {
		byID[l.Get("id").Str] = append(byID[l.Get("id").Str], l)
	}
	for _, id := range st.ids() {
		s := st[id]
		path, err := s.path(s.meta.Head)
		if err != nil {
			continue // reported by check
		}
		got := byID[id]
		if len(got) != len(path) {
			errs = append(errs, fmt.Errorf("session %s: wc-export gives %d messages, the active path has %d", id, len(got), len(path)))
			continue
		}
		for i, n := range path {
			l := got[i]
			if l.Get("seq").Uint() != n.seq || l.Get("parent").Uint() != n.parent || l.Get("message").Raw != string(n.raw) {
				errs = append(errs, fmt.Errorf("session %s: exported line %d is %.300s, stored node %d is %.300s", id, i, l.Raw, n.seq, n.raw))
				break
			}
		}
	}
	return errs
}

// ---- files ----

// copyDir copies a quiescent store (no command running) to dst.
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil // the resident process's socket
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
}

// residentPIDs lists the resident store processes serving storeDir: the
// processes a command started with WC_STORE_SERVE=storeDir (see
// cmd/internal/command). Processes that are not ours cannot be read and are
// skipped.
func residentPIDs(storeDir string) []int {
	want := []byte("WC_STORE_SERVE=" + storeDir)
	return residentPIDsWhere(func(kv []byte) bool { return bytes.Equal(kv, want) })
}

// residentPIDsUnder lists the resident store processes of any store under
// dir.
func residentPIDsUnder(dir string) []int {
	want := []byte("WC_STORE_SERVE=" + dir + string(filepath.Separator))
	return residentPIDsWhere(func(kv []byte) bool { return bytes.HasPrefix(kv, want) })
}

func residentPIDsWhere(match func(kv []byte) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if slices.ContainsFunc(bytes.Split(env, []byte{0}), match) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive: the process exists and is not a zombie (a zombie has closed its
// files, so it holds no lock).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// signalResidents SIGKILLs the resident store processes of storeDir without
// waiting; safe from any goroutine.
func signalResidents(storeDir string) int {
	pids := residentPIDs(storeDir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// chaosAfter runs kill after d, on a goroutine of its own. The function it
// returns cancels it, or, once it has started, waits until it is done: what
// it killed is then counted before the caller looks, and nothing is killed
// under the commands that run next.
func chaosAfter(d time.Duration, kill func()) (stop func()) {
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() {
		defer close(done)
		kill()
	})
	return func() {
		if !timer.Stop() {
			<-done
		}
	}
}

// killResidents SIGKILLs the resident store processes of storeDir, by
// pid, and waits until they are gone. It returns how many there were.
func killResidents(t testing.TB, storeDir string) int {
	t.Helper()
	pids := residentPIDs(storeDir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		// Waiting for an exit we caused, not timing anything: the bound
		// only turns a hang into a failure.
		for i := 0; alive(pid); i++ {
			if i == 6000 {
				t.Fatalf("resident process %d survives SIGKILL", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(pids)
}

// walLeft reports whether the store holds a write-ahead log that a
// read-write open must replay: what a killed writer leaves, and what makes
// Badger's ReadOnly open refuse, so the reader has to fall back.
func walLeft(storeDir string) bool {
	names, _ := filepath.Glob(filepath.Join(storeDir, "db", "*.mem"))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}

// emptyLogFiles lists the zero-length value logs and memtables in the store:
// what a writer killed between creating such a file and sizing it leaves.
// Badger would refuse every open; the store removes them under the
// exclusive lock (cmd/wc-ls/testdata/crash-empty-log.txtar).
func emptyLogFiles(storeDir string) []string {
	var out []string
	for _, pat := range []string{"*.vlog", "*.mem"} {
		names, _ := filepath.Glob(filepath.Join(storeDir, "db", pat))
		for _, n := range names {
			if fi, err := os.Stat(n); err == nil && fi.Size() == 0 {
				out = append(out, n)
			}
		}
	}
	return out
}

func fatalErrs(t testing.TB, what string, errs []error) {
	t.Helper()
	if len(errs) == 0 {
		return
	}
	var b strings.Builder
	for i, e := range errs {
		if i == 10 {
			fmt.Fprintf(&b, "\n… and %d more", len(errs)-10)
			break
		}
		b.WriteString("\n" + e.Error())
	}
	t.Fatalf("%s:%s", what, b.String())
}
