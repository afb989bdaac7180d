package gen

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// quantiles are (cumulative probability, content bytes) points.
type quantiles [][2]float64

var (
	userSizes      = quantiles{{0, 27}, {.10, 35}, {.25, 86}, {.50, 136}, {.75, 1183}, {.90, 5296}, {.95, 6970}, {1, 8675}}
	assistantSizes = quantiles{{0, 40}, {.10, 154}, {.25, 272}, {.50, 556}, {.75, 801}, {.90, 1063}, {.95, 2672}, {.99, 15997}, {1, 16000}}
	toolSizes      = quantiles{{0, 14}, {.10, 93}, {.25, 365}, {.50, 727}, {.75, 3376}, {.90, 7894}, {.95, 13730}, {.99, 32254}, {1, session.ToolResultMaxChars}}
	systemSizes    = quantiles{{0, 806}, {.25, 3638}, {.50, 3696}, {1, 6684}}

	// Messages per fixture session.
	sessionLengths = []int{5, 5, 6, 9, 11, 11, 17, 18, 25, 46, 153}
)

func (q quantiles) draw(r *rand.Rand) int {
	u := r.Float64()
	for i := 1; i < len(q); i++ {
		if u <= q[i][0] {
			lo, hi := q[i-1], q[i]
			f := (u - lo[0]) / (hi[0] - lo[0])
			return int(math.Exp(math.Log(lo[1]) + f*(math.Log(hi[1])-math.Log(lo[1]))))
		}
	}
	return int(q[len(q)-1][1])
}

// Config says what Generate writes; Main fills it from benchgen's flags.
type Config struct {
	Sessions      int
	Messages      int // 0: draw per session
	FirstMessages int // >0: session 0 has exactly this many
	Projects      int
	Seed          uint64
	WCDir         string // a wc store, if not empty
	JSONLDir      string // JSONL and metadata files, if not empty
	SQLiteFile    string // an SQLite database, if not empty
	// EtcdURLs are stores on etcd (etcd://HOSTS/PREFIX) each session is
	// written to as well, by EtcdWriters writers at once (each on a
	// connection of its own): one at a time, a commit's round trips
	// through Raft made the generation the longest part of a run.
	EtcdURLs      []string
	EtcdWriters   int
	SQLiteCommand string
	SQLiteJournal string
	Start         time.Time // sessions start within SpanDays from it
	SpanDays      int
	Progress      io.Writer // progress lines of a large run, or nil
}

// Summary is what Generate wrote.
type Summary struct {
	Sessions        int            `json:"sessions"`
	Messages        int            `json:"messages"`
	Roles           map[string]int `json:"roles"`
	ContentBytes    int64          `json:"content_bytes"`
	JSONBytes       int64          `json:"json_bytes"`
	FirstID         string         `json:"first_id"`
	FirstMessages   int            `json:"first_messages"`
	FirstJSONBytes  int64          `json:"first_json_bytes"`
	Project         string         `json:"project"`          // a project holding about 5% of the sessions
	ProjectSessions int            `json:"project_sessions"` // sessions under it
	Seconds         float64        `json:"seconds"`
}

// NewConfig is the configuration of benchgen's defaults: one session of
// drawn length, 20 projects, seed 1, within the last 90 days.
func NewConfig() Config {
	return Config{Sessions: 1, Projects: 20, Seed: 1, SQLiteCommand: "sqlite3", SQLiteJournal: "wal",
		Start: time.Now().UTC().Truncate(time.Second).Add(-90 * 24 * time.Hour), SpanDays: 90, Progress: os.Stderr}
}

// Main is benchgen: it parses args as flags, generates, and prints the
// summary as one line of JSON on stdout. It returns the exit status.
func Main(args []string) int {
	c := NewConfig()
	fs := flag.NewFlagSet("benchgen", flag.ContinueOnError)
	fs.IntVar(&c.Sessions, "sessions", 1, "number of sessions")
	fs.IntVar(&c.Messages, "messages", 0, "messages per session (0: draw from the fixtures' distribution)")
	fs.IntVar(&c.FirstMessages, "first-messages", 0, "if > 0, the first session has exactly this many messages")
	fs.IntVar(&c.Projects, "projects", 20, "number of projects (Zipf-distributed)")
	seed := fs.Int64("seed", 1, "random seed")
	fs.StringVar(&c.WCDir, "wc", "", "write a wc store in `DIR`")
	fs.StringVar(&c.JSONLDir, "jsonl", "", "write JSONL and metadata files under `DIR`")
	fs.StringVar(&c.SQLiteFile, "sqlite", "", "write an SQLite database `FILE` (through the sqlite3 command)")
	etcdURL := fs.String("etcd", "", "write a wc store on etcd at `URL` (etcd://HOST:PORT,.../PREFIX)")
	fs.IntVar(&c.EtcdWriters, "etcd-writers", 8, "sessions written to etcd at once")
	fs.StringVar(&c.SQLiteCommand, "sqlite3", "sqlite3", "the sqlite3 `COMMAND`")
	fs.StringVar(&c.SQLiteJournal, "journal", "wal", "SQLite journal mode")
	fs.IntVar(&c.SpanDays, "days", 90, "sessions start within the last `N` days")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || c.Sessions < 1 {
		fs.Usage()
		return 2
	}
	c.Seed = uint64(*seed)
	if *etcdURL != "" {
		c.EtcdURLs = []string{*etcdURL}
	}
	c.Start = time.Now().UTC().Truncate(time.Second).Add(-time.Duration(c.SpanDays) * 24 * time.Hour)
	sum, err := Generate(&c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		return 1
	}
	out, _ := json.Marshal(sum)
	fmt.Println(string(out))
	return 0
}

// sink receives each generated session.
type sink interface {
	add(meta *session.Meta, nodes []session.Node, lines [][]byte) error
	close() error
}

// Generate writes the sessions c asks for to each of its outputs.
func Generate(c *Config) (*Summary, error) {
	began := time.Now()
	var sinks []sink
	closeAll := func() error {
		var first error
		for _, s := range sinks {
			if err := s.close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if c.WCDir != "" {
		st, err := kvstore.Open(kvstore.Options{Dir: c.WCDir, LockTimeout: time.Minute}, kvstore.Write)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, &wcSink{st: st})
	}
	if len(c.EtcdURLs) > 0 {
		s, err := newEtcdSink(c.EtcdURLs, max(1, c.EtcdWriters))
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		sinks = append(sinks, s)
	}
	if c.JSONLDir != "" {
		s, err := newJSONLSink(c.JSONLDir)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		sinks = append(sinks, s)
	}
	if c.SQLiteFile != "" {
		s, err := newSQLSink(c.SQLiteCommand, c.SQLiteFile, c.SQLiteJournal)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		sinks = append(sinks, s)
	}

	r := rand.New(rand.NewPCG(c.Seed, 0x77632d62656e6368))
	corp := newCorpus(rand.New(rand.NewPCG(c.Seed, 1)))
	projects := projectPaths(c.Projects)
	zipf := zipfWeights(len(projects))
	filterProject := projects[min(4, len(projects)-1)]

	sum := &Summary{Sessions: c.Sessions, Roles: map[string]int{}, Project: filterProject}
	var lines [][]byte
	for i := 0; i < c.Sessions; i++ {
		n := c.Messages
		switch {
		case i == 0 && c.FirstMessages > 0:
			n = c.FirstMessages
		case n <= 0:
			n = max(2, int(math.Round(float64(sessionLengths[r.IntN(len(sessionLengths))])*(0.8+0.45*r.Float64()))))
		}
		project := projects[pick(r, zipf)]
		created := c.Start.Add(time.Duration(r.Int64N(int64(c.SpanDays)*24*3600)) * time.Second)
		id := UUID(r)
		msgs, content := messages(r, corp, n, created)

		meta := session.New(id, project, "", created)
		res := session.Append(&meta, nil, msgs, created, nil, session.AppendOptions{})
		meta.Touch(lastTime(msgs, created))

		lines = lines[:0]
		var size int64
		for j := range res.Nodes {
			line := res.Nodes[j].Msg.AppendJSON(nil)
			lines = append(lines, line)
			size += int64(len(line))
			sum.Roles[string(res.Nodes[j].Msg.Role)]++
		}
		for _, s := range sinks {
			if err := s.add(&meta, res.Nodes, lines); err != nil {
				return nil, errors.Join(fmt.Errorf("session %d: %w", i, err), closeAll())
			}
		}
		sum.Messages += n
		sum.ContentBytes += content
		sum.JSONBytes += size
		if project == filterProject || strings.HasPrefix(project, filterProject+"/") {
			sum.ProjectSessions++
		}
		if i == 0 {
			sum.FirstID, sum.FirstMessages, sum.FirstJSONBytes = id, n, size
		}
		if c.Progress != nil && c.Sessions >= 1000 && (i+1)%(c.Sessions/10) == 0 {
			fmt.Fprintf(c.Progress, "benchgen: %d/%d sessions, %.0f MB, %.0fs\n", i+1, c.Sessions,
				float64(sum.JSONBytes)/1e6, time.Since(began).Seconds())
		}
	}
	if err := closeAll(); err != nil {
		return nil, err
	}
	sum.Seconds = math.Round(time.Since(began).Seconds()*10) / 10
	return sum, nil
}

func lastTime(msgs []session.Message, def time.Time) time.Time {
	if len(msgs) == 0 {
		return def
	}
	t, err := time.Parse(time.RFC3339Nano, msgs[len(msgs)-1].CreatedAt)
	if err != nil {
		return def
	}
	return t
}

// UUID is a version 4 UUID drawn from r.
func UUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var projectNames = []string{"api-gateway", "web-app", "billing", "infra", "auth-service", "mobile", "data-pipeline",
	"search", "notifications", "cli", "docs", "ml-models", "payments", "admin-ui", "scheduler", "storage",
	"metrics", "chat", "importer", "sdk"}

func projectPaths(n int) []string {
	out := make([]string, n)
	for i := range out {
		name := projectNames[i%len(projectNames)]
		if i >= len(projectNames) {
			name += strconv.Itoa(i / len(projectNames))
		}
		out[i] = "/home/dev/src/" + name
	}
	return out
}

func zipfWeights(n int) []float64 {
	w := make([]float64, n)
	total := 0.0
	for i := range w {
		w[i] = 1 / float64(i+1)
		total += w[i]
	}
	acc := 0.0
	for i := range w {
		acc += w[i] / total
		w[i] = acc
	}
	return w
}

func pick(r *rand.Rand, cumulative []float64) int {
	u := r.Float64()
	for i, c := range cumulative {
		if u <= c {
			return i
		}
	}
	return len(cumulative) - 1
}

var toolNames = []struct {
	name   string
	weight float64
}{{"read", .35}, {"bash", .30}, {"grep", .10}, {"glob", .10}, {"edit", .10}, {"write", .05}}

func toolName(r *rand.Rand) string {
	u := r.Float64()
	for _, t := range toolNames {
		if u < t.weight {
			return t.name
		}
		u -= t.weight
	}
	return "read"
}

// messages draws n messages: turns of a user prompt, then assistant steps,
// each calling tools with probability pCall (1-3 calls, mean 1.74) whose
// outputs follow as tool messages; a step without calls ends the turn. That
// gives tool ≈ assistant ≈ 40% and user ≈ 19% (see the package comment).
// It returns the messages and their content bytes.
func messages(r *rand.Rand, corp *corpus, n int, t time.Time) ([]session.Message, int64) {
	const pCall = 0.62
	out := make([]session.Message, 0, n)
	var content int64
	stamp := func() string {
		t = t.Add(time.Duration(1+r.IntN(60)) * time.Second)
		return session.FormatTime(t)
	}
	add := func(m session.Message, size int) {
		out = append(out, m)
		content += int64(size)
	}
	if n > 4 && r.IntN(2) == 0 {
		size := systemSizes.draw(r)
		add(session.Message{Role: session.RoleSystem, Content: session.TextContent(corp.prose(r, size)), CreatedAt: stamp()}, size)
	}
	call := 0
	var pending []session.Block // tooluse blocks awaiting their output
	expectUser := true
	for len(out) < n {
		switch {
		case len(pending) > 0:
			b := pending[0]
			pending = pending[1:]
			size := toolSizes.draw(r)
			text := corp.tool(r, size)
			if b.Name == "edit" || b.Name == "write" {
				text = fmt.Sprintf("%s\n[+%d -%d]", text, 1+r.IntN(40), r.IntN(20))
			}
			add(session.Message{Role: session.RoleTool, Content: session.TextContent(text), ToolCallID: b.ID,
				Name: b.Name, IsError: r.IntN(25) == 0, CreatedAt: stamp()}, size)
		case expectUser:
			size := userSizes.draw(r)
			add(session.Message{Role: session.RoleUser, Content: session.TextContent(corp.prose(r, size)), CreatedAt: stamp()}, size)
			expectUser = false
		default:
			size := assistantSizes.draw(r)
			var blocks []session.Block
			rest := size
			if r.IntN(10) < 3 && size > 200 {
				th := size * 2 / 5
				rest -= th
				blocks = append(blocks, session.Block{Type: session.BlockThinking, Text: corp.prose(r, th),
					Signature: corp.signature(r), HasSignature: true})
			}
			blocks = append(blocks, session.Block{Type: session.BlockText, Text: corp.prose(r, rest)})
			calls := 0
			if r.Float64() < pCall && len(out)+2 < n {
				calls = 1
				if u := r.Float64(); u >= 0.74 {
					calls = 3
				} else if u >= 0.5 {
					calls = 2
				}
				calls = min(calls, n-len(out)-1)
			}
			for range calls {
				call++
				name := toolName(r)
				b := session.Block{Type: session.BlockToolUse, ID: fmt.Sprintf("toolu_%04d%s", call, corp.token(r, 8)),
					Name: name, Input: toolInput(r, corp, name)}
				blocks = append(blocks, b)
				pending = append(pending, b)
			}
			add(session.Message{Role: session.RoleAssistant, Content: session.BlockContent(blocks...), CreatedAt: stamp()}, size)
			expectUser = calls == 0
		}
	}
	return out, content
}

// toolInput is a flat JSON object of strings and numbers (bench.sh's jq
// and SQL markdown renderers indent only flat objects).
func toolInput(r *rand.Rand, corp *corpus, name string) json.RawMessage {
	path := corp.path(r)
	switch name {
	case "read":
		return json.RawMessage(fmt.Sprintf(`{"path":%q,"offset":%d,"limit":%d}`, path, r.IntN(400), 50+r.IntN(400)))
	case "bash":
		cmds := []string{"go test ./...", "go build ./cmd/...", "git status --short", "make lint", "npm test -- --watch=false", "ls -la " + filepath.Dir(path)}
		return json.RawMessage(fmt.Sprintf(`{"command":%q,"timeout":%d}`, cmds[r.IntN(len(cmds))], 120))
	case "grep":
		return json.RawMessage(fmt.Sprintf(`{"pattern":%q,"path":%q}`, corp.word(r), filepath.Dir(path)))
	case "glob":
		return json.RawMessage(fmt.Sprintf(`{"pattern":%q}`, filepath.Dir(path)+"/**/*"+filepath.Ext(path)))
	default:
		return json.RawMessage(fmt.Sprintf(`{"path":%q,"old_string":%q,"new_string":%q}`, path, corp.word(r), corp.word(r)))
	}
}

// corpus holds two long texts that messages are cut from: prose (with
// markdown and code fences, as assistants write) and tool output (code with
// Read's "N→" line numbers, logs, test output, grep hits, markdown files).
type corpus struct {
	proseText, toolText string
	words               []string
	paths               []string
}

var vocabulary = strings.Fields(`the a to of and in is it that for this on with be as are not we can
	you if but or at by from will should would could function test handler request response error value
	config file path session store message tool output user assistant token cache index query update list
	append export compact branch budget lock timeout retry parse decode encode buffer stream writer reader
	context deadline channel goroutine mutex allocation benchmark profile latency throughput memory disk
	login auth password migration schema table column row transaction commit rollback fixture golden
	fix bug failing flaky passes build lint format refactor rename extract inline move delete add remove
	because since when then after before while until already still again instead rather however also
	café naïve résumé 中文 日本語 —`)

var identifiers = strings.Fields(`ctx err req resp buf cfg srv db tx st id n i j k key val msg out in
	handleLogin parseConfig openStore readMeta writeNode decodeMessage encodeNode newSession appendTurn
	listSessions exportMarkdown compactPath userID sessionID retryCount maxTokens lockTimeout`)

func newCorpus(r *rand.Rand) *corpus {
	c := &corpus{words: vocabulary}
	dirs := []string{"cmd/server", "internal/auth", "internal/store", "pkg/api", "pkg/session", "web/src/components", "scripts", "docs"}
	exts := []string{".go", ".go", ".go", ".ts", ".tsx", ".py", ".md", ".sql", ".yaml"}
	for range 200 {
		c.paths = append(c.paths, dirs[r.IntN(len(dirs))]+"/"+identifiers[r.IntN(len(identifiers))]+exts[r.IntN(len(exts))])
	}
	var p strings.Builder
	for p.Len() < 3<<20 {
		switch r.IntN(12) {
		case 0: // a code fence
			p.WriteString("\n\n```go\n")
			c.codeLines(r, &p, 3+r.IntN(12), false)
			p.WriteString("```\n\n")
		case 1: // a list
			for range 2 + r.IntN(4) {
				p.WriteString("- ")
				c.sentence(r, &p)
				p.WriteByte('\n')
			}
		case 2:
			p.WriteString("`" + c.path(r) + "` ")
		default:
			c.sentence(r, &p)
			if r.IntN(4) == 0 {
				p.WriteString("\n\n")
			}
		}
	}
	c.proseText = p.String()

	var t strings.Builder
	for t.Len() < 4<<20 {
		switch r.IntN(6) {
		case 0, 1: // Read output
			c.codeLines(r, &t, 20+r.IntN(200), true)
		case 2: // test or build output
			for range 5 + r.IntN(60) {
				switch r.IntN(4) {
				case 0:
					fmt.Fprintf(&t, "=== RUN   Test%s/%s\n", upper1(c.word(r)), c.word(r))
				case 1:
					fmt.Fprintf(&t, "--- PASS: Test%s (0.%02ds)\n", upper1(c.word(r)), r.IntN(100))
				case 2:
					fmt.Fprintf(&t, "%s:%d:%d: %s %s\n", c.path(r), 1+r.IntN(900), 1+r.IntN(80), c.word(r), c.word(r))
				default:
					fmt.Fprintf(&t, "ok  \tgithub.com/acme/%s\t%d.%03ds\n", filepath.Dir(c.path(r)), r.IntN(9), r.IntN(1000))
				}
			}
		case 3: // grep hits
			for range 3 + r.IntN(40) {
				fmt.Fprintf(&t, "%s:%d:\t%s := %s(%s)\n", c.path(r), 1+r.IntN(900), identifiers[r.IntN(len(identifiers))],
					identifiers[r.IntN(len(identifiers))], identifiers[r.IntN(len(identifiers))])
			}
		case 4: // a log
			for range 5 + r.IntN(80) {
				fmt.Fprintf(&t, "2026-08-%02dT%02d:%02d:%02d.%03dZ %s %s: %s path=/api/v1/%s status=%d dur=%dms\n",
					1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000),
					[]string{"INFO", "INFO", "WARN", "ERROR", "DEBUG"}[r.IntN(5)], c.word(r), c.word(r), c.word(r),
					[]int{200, 200, 201, 404, 500}[r.IntN(5)], r.IntN(900))
			}
		default: // a markdown file, fences and all
			t.WriteString("# " + upper1(c.word(r)) + "\n\n")
			for range 2 + r.IntN(6) {
				c.sentence(r, &t)
				t.WriteString("\n\n```sh\n$ go test ./...\n```\n\n")
			}
		}
	}
	c.toolText = t.String()
	return c
}

func (c *corpus) word(r *rand.Rand) string { return c.words[r.IntN(len(c.words))] }
func (c *corpus) path(r *rand.Rand) string { return c.paths[r.IntN(len(c.paths))] }

func (c *corpus) sentence(r *rand.Rand, b *strings.Builder) {
	n := 5 + r.IntN(18)
	for i := range n {
		w := c.word(r)
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteString(". ")
}

func (c *corpus) codeLines(r *rand.Rand, b *strings.Builder, n int, numbered bool) {
	indent := 0
	for i := range n {
		if numbered {
			fmt.Fprintf(b, "%6d→", i+1)
		}
		b.WriteString(strings.Repeat("\t", indent))
		id := func() string { return identifiers[r.IntN(len(identifiers))] }
		switch r.IntN(7) {
		case 0:
			fmt.Fprintf(b, "func %s(%s context.Context, %s string) (*%s, error) {\n", id(), id(), id(), upper1(id()))
			indent = min(indent+1, 4)
		case 1:
			fmt.Fprintf(b, "if %s != nil {\n", id())
			indent = min(indent+1, 4)
		case 2:
			b.WriteString("}\n")
			indent = max(indent-1, 0)
		case 3:
			fmt.Fprintf(b, "return nil, fmt.Errorf(\"%s %s: %%w\", %s)\n", c.word(r), c.word(r), id())
		case 4:
			fmt.Fprintf(b, "// %s %s %s %s\n", c.word(r), c.word(r), c.word(r), c.word(r))
		default:
			fmt.Fprintf(b, "%s := %s.%s(%s, %d)\n", id(), id(), upper1(id()), id(), r.IntN(100))
		}
	}
}

// cut returns about size bytes of text at a random place, on rune
// boundaries.
func cut(r *rand.Rand, text string, size int) string {
	if size <= 0 {
		return ""
	}
	if size >= len(text) {
		size = len(text) - 1
	}
	i := r.IntN(len(text) - size)
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	j := i + size
	for j < len(text) && !utf8.RuneStart(text[j]) {
		j++
	}
	return text[i:j]
}

func (c *corpus) prose(r *rand.Rand, size int) string { return cut(r, c.proseText, size) }
func (c *corpus) tool(r *rand.Rand, size int) string  { return cut(r, c.toolText, size) }

const tokenChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (c *corpus) token(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = tokenChars[r.IntN(len(tokenChars))]
	}
	return string(b)
}

func (c *corpus) signature(r *rand.Rand) string { return "Eq" + c.token(r, 200+r.IntN(300)) }

// wcSink writes through the store, one Commit per session, as wc-new
// --import does.
type wcSink struct{ st *kvstore.Store }

func (s *wcSink) add(meta *session.Meta, nodes []session.Node, _ [][]byte) error {
	return s.st.Commit(meta, nodes)
}
func (s *wcSink) close() error { return s.st.Close() }

// jsonlSink writes DIR/sessions/ID.jsonl and DIR/meta/ID.json.
type jsonlSink struct {
	dir string
	buf *bufio.Writer
}

func newJSONLSink(dir string) (*jsonlSink, error) {
	for _, d := range []string{"sessions", "meta"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return &jsonlSink{dir: dir, buf: bufio.NewWriterSize(nil, 1<<20)}, nil
}

// jsonlMeta is the per-session metadata file of the JSONL layout.
type jsonlMeta struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Project      string `json:"project"`
	Created      string `json:"created"`
	Updated      string `json:"updated"`
	MessageCount uint64 `json:"message_count"`
}

func (s *jsonlSink) add(meta *session.Meta, _ []session.Node, lines [][]byte) error {
	f, err := os.Create(filepath.Join(s.dir, "sessions", meta.ID+".jsonl"))
	if err != nil {
		return err
	}
	s.buf.Reset(f)
	for _, l := range lines {
		s.buf.Write(l)
		s.buf.WriteByte('\n')
	}
	err = s.buf.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	m, err := marshalNoEscape(jsonlMeta{ID: meta.ID, Title: meta.Title, Project: meta.ProjectPath,
		Created: meta.CreatedAt, Updated: meta.UpdatedAt, MessageCount: meta.MessageCount})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "meta", meta.ID+".json"), m, 0o644)
}

func (s *jsonlSink) close() error { return nil }

func marshalNoEscape(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// sqlSink pipes one transaction into sqlite3.
type sqlSink struct {
	cmd *exec.Cmd
	w   *bufio.Writer
	in  interface{ Close() error }
}

func newSQLSink(command, file, journal string) (*sqlSink, error) {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	cmd := exec.Command(command, "-batch", "-bail", file)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &sqlSink{cmd: cmd, w: bufio.NewWriterSize(in, 1<<20), in: in}
	fmt.Fprintf(s.w, "PRAGMA journal_mode=%s;\n", journal)
	s.w.WriteString(`PRAGMA synchronous=OFF;
CREATE TABLE sessions(id TEXT PRIMARY KEY, title TEXT, project TEXT, created TEXT, updated TEXT);
CREATE TABLE messages(session_id TEXT NOT NULL, seq INTEGER NOT NULL, json TEXT NOT NULL);
BEGIN;
`)
	return s, nil
}

func sqlQuote(dst []byte, s []byte) []byte {
	dst = append(dst, '\'')
	for _, c := range s {
		if c == '\'' {
			dst = append(dst, '\'')
		}
		dst = append(dst, c)
	}
	return append(dst, '\'')
}

func (s *sqlSink) add(meta *session.Meta, nodes []session.Node, lines [][]byte) error {
	var b []byte
	b = append(b, "INSERT INTO sessions VALUES("...)
	for i, v := range []string{meta.ID, meta.Title, meta.ProjectPath, meta.CreatedAt, meta.UpdatedAt} {
		if i > 0 {
			b = append(b, ',')
		}
		b = sqlQuote(b, []byte(v))
	}
	b = append(b, ");\n"...)
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	for i, l := range lines {
		b = append(b[:0], "INSERT INTO messages VALUES("...)
		b = sqlQuote(b, []byte(meta.ID))
		b = append(b, ',')
		b = strconv.AppendUint(b, nodes[i].Seq, 10)
		b = append(b, ',')
		b = sqlQuote(b, l)
		b = append(b, ");\n"...)
		if _, err := s.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlSink) close() error {
	s.w.WriteString(`CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq);
CREATE INDEX sessions_updated ON sessions(updated);
CREATE INDEX sessions_project_updated ON sessions(project, updated);
COMMIT;
ANALYZE;
`)
	err := s.w.Flush()
	if cerr := s.in.Close(); err == nil {
		err = cerr
	}
	if werr := s.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("sqlite3: %w", werr)
	}
	return err
}

func upper1(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}
