package format

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// counts are what a transcript holds: tool calls, their results, images,
// and the token usage (input, output, cache creation, cache read, each
// counted once).
type counts struct {
	calls, results, images int
	usage                  [4]uint64
}

func (c counts) String() string {
	return fmt.Sprintf("calls %d, results %d, images %d, usage %v", c.calls, c.results, c.images, c.usage)
}

func usageOf(u session.Usage) [4]uint64 {
	var cc, cr uint64
	if u.CacheCreationInputTokens != nil {
		cc = *u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		cr = *u.CacheReadInputTokens
	}
	return [4]uint64{u.InputTokens, u.OutputTokens, cc, cr}
}

// importedCounts counts over every node of the imported sessions: a
// message shared by several paths counts once.
func importedCounts(imps []Imported) counts {
	var c counts
	for i, imp := range imps {
		_, nodes := session.FromShare(&imp.Share, testID(i), t0)
		for _, n := range nodes {
			if n.Msg.Role == session.RoleTool {
				c.results++
			}
			for _, b := range n.Msg.Content.Blocks {
				switch b.Type {
				case session.BlockToolUse:
					c.calls++
				case session.BlockImage:
					c.images++
				}
			}
		}
		u := usageOf(imp.Share.Meta.Usage)
		for k := range u {
			c.usage[k] += u[k]
		}
	}
	return c
}

func eachJSONLine(data []byte, fn func(v gjson.Result)) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v := gjson.ParseBytes(line); gjson.ValidBytes(line) && v.IsObject() {
			fn(v)
		}
	}
}

// sourceCounts counts the fixture from its own records, by the rules the
// formats document (reference/formats.md, testdata/fixtures/README.md),
// without the importers: the distinct call and result ids, the image
// parts, and the usage as each format states it once.
func sourceCounts(t *testing.T, dir string, data []byte) counts {
	var c counts
	calls, results := map[string]bool{}, map[string]bool{}
	blocks := func(list gjson.Result) {
		list.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tool_use":
				calls[b.Get("id").Str] = true
			case "tool_result":
				results[b.Get("tool_use_id").Str] = true
				b.Get("content").ForEach(func(_, p gjson.Result) bool {
					if p.Get("type").Str == "image" {
						c.images++
					}
					return true
				})
			case "image":
				c.images++
			}
			return true
		})
	}
	if dir == "claude-web" { // {"loglines":[record, …]}: the records are a transcript's lines
		var lines []string
		gjson.GetBytes(data, "loglines").ForEach(func(_, r gjson.Result) bool {
			lines = append(lines, string(compactJSON(r.Raw)))
			return true
		})
		data, dir = []byte(strings.Join(lines, "\n")), "claude-code"
	}
	switch dir {
	case "claude-code", "claude-stream":
		// The last usage line of each response (the field-wise largest);
		// the stream's result line states the run's total.
		last := map[string]gjson.Result{}
		var order []string
		var total gjson.Result
		seen := map[string]bool{}
		eachJSONLine(data, func(v gjson.Result) {
			if raw := v.Raw; v.Get("uuid").Exists() {
				if seen[v.Get("uuid").Str+raw] {
					return // an exact duplicate record
				}
				seen[v.Get("uuid").Str+raw] = true
			}
			switch v.Get("type").Str {
			case "assistant", "user":
				blocks(v.Get("message.content"))
			case "result":
				total = v.Get("usage")
			}
			if u := v.Get("message.usage"); v.Get("type").Str == "assistant" && u.IsObject() {
				id := v.Get("message.id").Str
				if id == "" {
					id = v.Get("uuid").Str
				}
				if _, ok := last[id]; !ok {
					order = append(order, id)
				}
				if prev, ok := last[id]; !ok || u.Get("output_tokens").Uint() >= prev.Get("output_tokens").Uint() {
					last[id] = u
				}
			}
		})
		add := func(u gjson.Result) {
			c.usage[0] += u.Get("input_tokens").Uint()
			c.usage[1] += u.Get("output_tokens").Uint()
			c.usage[2] += u.Get("cache_creation_input_tokens").Uint()
			c.usage[3] += u.Get("cache_read_input_tokens").Uint()
		}
		if total.IsObject() {
			add(total)
		} else {
			for _, id := range order {
				add(last[id])
			}
		}
	case "codex":
		var total gjson.Result
		item := func(p gjson.Result) {
			switch t := p.Get("type").Str; {
			case t == "function_call" || t == "custom_tool_call" || t == "local_shell_call":
				calls[p.Get("call_id").Str] = true
			case strings.HasSuffix(t, "_call_output"):
				results[p.Get("call_id").Str] = true
			case t == "message":
				p.Get("content").ForEach(func(_, part gjson.Result) bool {
					if part.Get("type").Str == "input_image" {
						c.images++
					}
					return true
				})
			}
		}
		eachJSONLine(data, func(v gjson.Result) {
			p := v.Get("payload")
			switch v.Get("type").Str {
			case "response_item":
				item(p)
			case "compacted": // the items that replace the history are the new path's
				p.Get("replacement_history").ForEach(func(_, it gjson.Result) bool {
					item(it)
					return true
				})
			case "event_msg":
				if p.Get("type").Str == "token_count" && p.Get("info.total_token_usage").IsObject() {
					total = p.Get("info.total_token_usage")
				}
			}
		})
		in, cached := total.Get("input_tokens").Uint(), total.Get("cached_input_tokens").Uint()
		c.usage = [4]uint64{in - cached, total.Get("output_tokens").Uint(), 0, cached}
	case "codex-exec":
		eachJSONLine(data, func(v gjson.Result) {
			item := v.Get("item")
			switch it := item.Get("type").Str; {
			case v.Get("type").Str == "turn.completed":
				u := v.Get("usage")
				in, cached := u.Get("input_tokens").Uint(), u.Get("cached_input_tokens").Uint()
				c.usage[0] += in - cached
				c.usage[1] += u.Get("output_tokens").Uint()
				c.usage[3] += cached
			case it == "command_execution" || it == "file_change" || it == "mcp_tool_call":
				calls[item.Get("id").Str] = true
				if v.Get("type").Str == "item.completed" {
					results[item.Get("id").Str] = true
				}
			}
		})
	case "cursor":
		eachJSONLine(data, func(v gjson.Result) {
			switch {
			case v.Get("type").Str == "tool_call" && v.Get("subtype").Str == "started":
				calls[v.Get("call_id").Str] = true
			case v.Get("type").Str == "tool_call" && v.Get("subtype").Str == "completed":
				results[v.Get("call_id").Str] = true
			}
		})
	case "opencode":
		doc := gjson.ParseBytes(data)
		doc.Get("messages").ForEach(func(_, m gjson.Result) bool {
			if tk := m.Get("info.tokens"); m.Get("info.role").Str == "assistant" && tk.IsObject() {
				c.usage[0] += tk.Get("input").Uint()
				c.usage[1] += tk.Get("output").Uint()
				c.usage[2] += tk.Get("cache.write").Uint()
				c.usage[3] += tk.Get("cache.read").Uint()
			}
			m.Get("parts").ForEach(func(_, p gjson.Result) bool {
				switch p.Get("type").Str {
				case "tool":
					calls[p.Get("callID").Str] = true
					if s := p.Get("state.status").Str; s == "completed" || s == "error" {
						results[p.Get("callID").Str] = true
					}
				case "file":
					if strings.HasPrefix(p.Get("mime").Str, "image/") {
						c.images++
					}
				}
				return true
			})
			return true
		})
	case "gemini":
		var msgs []gjson.Result
		if doc := gjson.ParseBytes(data); gjson.ValidBytes(data) && doc.Get("messages").IsArray() {
			msgs = doc.Get("messages").Array()
		} else {
			byID := map[string]int{}
			eachJSONLine(data, func(v gjson.Result) {
				switch {
				case v.Get("id").Type == gjson.String:
					if i, ok := byID[v.Get("id").Str]; ok {
						msgs[i] = v // written again: the later record stands
						return
					}
					byID[v.Get("id").Str] = len(msgs)
					msgs = append(msgs, v)
				case v.Get("type").Str == "tool_use":
					calls[v.Get("tool_id").Str] = true
				case v.Get("type").Str == "tool_result":
					results[v.Get("tool_id").Str] = true
				case v.Get("type").Str == "result":
					s := v.Get("stats")
					c.usage = [4]uint64{s.Get("input").Uint(), s.Get("output_tokens").Uint(), 0, s.Get("cached").Uint()}
				}
			})
		}
		for _, m := range msgs {
			m.Get("toolCalls").ForEach(func(_, tc gjson.Result) bool {
				calls[tc.Get("id").Str] = true
				if tc.Get("result").Exists() || tc.Get("status").Str == "error" || tc.Get("status").Str == "cancelled" {
					results[tc.Get("id").Str] = true
				}
				return true
			})
			if tk := m.Get("tokens"); tk.IsObject() {
				in, cached := tk.Get("input").Uint(), tk.Get("cached").Uint()
				c.usage[0] += in - cached + tk.Get("tool").Uint()
				c.usage[1] += tk.Get("output").Uint() + tk.Get("thoughts").Uint()
				c.usage[3] += cached
			}
		}
	default:
		t.Fatalf("no source counter for %s", dir)
	}
	c.calls, c.results = len(calls), len(results)
	return c
}

// TestFixturesCounts compares what every fixture holds, counted from its
// own records, with what its import holds; run with -v for the table.
func TestFixturesCounts(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.dir+"/"+fx.name, func(t *testing.T) {
			data := readFile(t, fx.path)
			imps, err := Import(KindAuto, data, Options{Sidechains: true})
			if err != nil {
				t.Fatal(err)
			}
			want := sourceCounts(t, fx.dir, data)
			got := importedCounts(imps)
			t.Logf("| %s/%s | %s |", fx.dir, fx.name, got)
			if got != want {
				t.Errorf("import %s\nsource %s", got, want)
			}
		})
	}
}

// TestFixturesRoundTrip: every fixture's import, written as share JSON
// and imported again (json → import → json), is the same document but for
// the id, and holds the same counts.
func TestFixturesRoundTrip(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.dir+"/"+fx.name, func(t *testing.T) {
			imps, err := Import(KindAuto, readFile(t, fx.path), Options{Sidechains: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, imp := range imps {
				meta, nodes := session.FromShare(&imp.Share, testID(i), t0)
				first := session.AppendShare(nil, &meta, session.NewTree(nodes))
				again, err := Import(KindNative, first, Options{})
				if err != nil {
					t.Fatalf("the share does not import: %v", err)
				}
				meta2, nodes2 := session.FromShare(&again[0].Share, testID(i+100), t0)
				second := session.AppendShare(nil, &meta2, session.NewTree(nodes2))
				strip := func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"id":"`+meta.ID+`"`), []byte(`"id":"`+meta2.ID+`"`), 1)
				}
				if !bytes.Equal(strip(first), second) {
					t.Errorf("session %d: the round trip changed the share\n%s", i, firstDiff(strip(first), second))
				}
				if a, b := importedCounts([]Imported{imp}), importedCounts(again); a != b {
					t.Errorf("session %d: counts %s, after the round trip %s", i, a, b)
				}
			}
		})
	}
}

// BenchmarkImportFixtures imports the largest fixture of each format (see
// scripts/import-bench.sh for wc-new on a directory, beside jq).
func BenchmarkImportFixtures(b *testing.B) {
	largest := map[string]fixture{}
	var dirs []string
	for _, fx := range fixtures(b) {
		cur, ok := largest[fx.dir]
		if !ok {
			dirs = append(dirs, fx.dir)
		}
		if !ok || len(readFile(b, fx.path)) > len(readFile(b, cur.path)) {
			largest[fx.dir] = fx
		}
	}
	for _, dir := range dirs {
		fx := largest[dir]
		data := readFile(b, fx.path)
		b.Run(dir+"/"+fx.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Import(KindAuto, data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
