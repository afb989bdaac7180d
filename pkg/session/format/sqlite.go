package format

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Sessions other agents keep in SQLite: opencode's opencode.db, goose's
// sessions.db, llm's logs.db (both its schemas) and whycodes' database.
// The program wc-sqlite reads their tables (this package links no SQLite
// library); SQLiteApp tells the application from the tables it lists, and
// ImportSQLite turns the rows it prints ({"table":…,"row":{…}} lines) into
// sessions: every session or conversation of the database, or those whose
// ids only names.

const (
	KindGoose    Kind = "goose"    // goose's sessions.db
	KindLLM      Kind = "llm"      // llm's logs.db
	KindWhycodes Kind = "whycodes" // whycodes' SQLite database (a share is native)
)

// SQLiteMagic opens every SQLite database file.
const SQLiteMagic = "SQLite format 3\x00"

// SQLiteApp names the application whose database has these tables (name
// to columns) and the tables ImportSQLite needs.
func SQLiteApp(tables map[string][]string) (Kind, []string, error) {
	has := func(table string, cols ...string) bool {
		got, ok := tables[table]
		if !ok {
			return false
		}
		for _, c := range cols {
			found := false
			for _, g := range got {
				found = found || g == c
			}
			if !found {
				return false
			}
		}
		return true
	}
	switch {
	case has("session", "id", "directory") && has("message", "id", "session_id", "data") && has("part", "id", "message_id", "data"):
		return KindOpencode, []string{"session", "message", "part"}, nil
	case has("sessions", "id", "working_dir") && has("messages", "session_id", "role", "content_json"):
		return KindGoose, []string{"sessions", "messages"}, nil
	case has("threads", "id", "tip_message_hash") && has("messages", "hash", "parent_hash") && has("parts", "message_hash", "position"):
		want := []string{"threads", "turns", "messages", "parts", "fragments"}
		if has("responses", "id", "prompt") {
			want = append(want, "conversations", "responses", "tool_calls", "tool_results")
		}
		return KindLLM, presentTables(tables, want), nil
	case has("responses", "id", "prompt", "response", "conversation_id"):
		return KindLLM, presentTables(tables, []string{"conversations", "responses", "tool_calls", "tool_results"}), nil
	case has("sessions", "id", "project_path") && has("messages", "session_id", "role", "content"):
		return KindWhycodes, []string{"sessions", "messages"}, nil
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 6 {
		names = append(names[:6], "…")
	}
	return "", nil, badInputf("an SQLite database of no application wc knows (tables: %s)", strings.Join(names, ", "))
}

func presentTables(tables map[string][]string, want []string) []string {
	var out []string
	for _, t := range want {
		if _, ok := tables[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// sqlRows holds a table's rows in the order wc-sqlite printed them.
type sqlRows map[string][]gjson.Result

func parseSQLRows(data []byte) (sqlRows, error) {
	rows := sqlRows{}
	var err error
	forEachLine(data, func(line []byte) {
		if err != nil {
			return
		}
		v := gjson.ParseBytes(line)
		if !gjson.ValidBytes(line) || !v.Get("row").IsObject() {
			err = badInputf("the rows of the database do not read")
			return
		}
		rows[v.Get("table").Str] = append(rows[v.Get("table").Str], v.Get("row"))
	})
	return rows, err
}

// ImportSQLite imports the sessions of an application's database from the
// rows of its tables (wc-sqlite rows). With only, just the sessions,
// conversations or threads of those ids.
func ImportSQLite(kind Kind, data []byte, only []string) ([]Imported, error) {
	rows, err := parseSQLRows(data)
	if err != nil {
		return nil, err
	}
	want := func(id string) bool {
		if len(only) == 0 {
			return true
		}
		for _, o := range only {
			if o == id {
				return true
			}
		}
		return false
	}
	var out []Imported
	switch kind {
	case KindOpencode:
		out, err = opencodeDB(rows, want)
	case KindGoose:
		out, err = gooseDB(rows, want)
	case KindLLM:
		out, err = llmDB(rows, want)
	case KindWhycodes:
		out, err = whycodesDB(rows, want)
	default:
		return nil, badInputf("no SQLite importer for %q", string(kind))
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if len(only) > 0 {
			return nil, badInputf("the database holds no session %s", strings.Join(only, ", "))
		}
		return nil, errNoMessages
	}
	finishImports(out, kind)
	return out, nil
}

// byColumn groups rows by the string value of a column.
func byColumn(rows []gjson.Result, col string) map[string][]gjson.Result {
	out := map[string][]gjson.Result{}
	for _, r := range rows {
		k := r.Get(gjson.Escape(col)).String()
		out[k] = append(out[k], r)
	}
	return out
}

// selected is a session row with its message rows.
type selected struct {
	id   string
	row  gjson.Result
	msgs []gjson.Result
}

// selectedSessions are the rows of the sessions table that want selects,
// each with the rows of messages that name it in session_id, in the order
// less gives them (the table's order among equals).
func selectedSessions(rows sqlRows, want func(string) bool, less func(a, b gjson.Result) bool) []selected {
	msgs := byColumn(rows["messages"], "session_id")
	var out []selected
	for _, s := range rows["sessions"] {
		id := s.Get("id").Str
		if !want(id) {
			continue
		}
		ms := msgs[id]
		sort.SliceStable(ms, func(i, j int) bool { return less(ms[i], ms[j]) })
		out = append(out, selected{id, s, ms})
	}
	return out
}

// ---- opencode

// opencodeDB rebuilds each session's export from opencode.db (since 1.2):
// the session row's columns, each message's data with its id, each part's
// with its ids, in id order (opencode's ids ascend with time).
func opencodeDB(rows sqlRows, want func(string) bool) ([]Imported, error) {
	msgs := byColumn(rows["message"], "session_id")
	parts := byColumn(rows["part"], "message_id")
	var out []Imported
	for _, s := range rows["session"] {
		id := s.Get("id").Str
		if !want(id) {
			continue
		}
		var info jsonObject
		info.strVal("id", id)
		for _, c := range [][2]string{{"slug", "slug"}, {"project_id", "projectID"}, {"directory", "directory"}, {"parent_id", "parentID"}, {"title", "title"}, {"version", "version"}} {
			if v := s.Get(c[0]); v.Type == gjson.String {
				info.strVal(c[1], v.Str)
			}
		}
		var sum jsonObject
		for _, c := range [][2]string{{"summary_additions", "additions"}, {"summary_deletions", "deletions"}, {"summary_files", "files"}} {
			if v := s.Get(c[0]); v.Type == gjson.Number {
				sum.raw(c[1], v.Raw)
			}
		}
		if !sum.empty() {
			info.raw("summary", string(sum.done()))
		}
		if v := s.Get("share_url"); v.Type == gjson.String {
			info.raw("share", `{"url":`+string(jsonString(v.Str))+`}`)
		}
		if v := s.Get("revert"); v.Type == gjson.String && gjson.Valid(v.Str) {
			info.raw("revert", v.Str)
		}
		var tm jsonObject
		for _, c := range [][2]string{{"time_created", "created"}, {"time_updated", "updated"}, {"time_compacting", "compacting"}, {"time_archived", "archived"}} {
			if v := s.Get(c[0]); v.Type == gjson.Number {
				tm.raw(c[1], v.Raw)
			}
		}
		info.raw("time", string(tm.done()))
		var list []OpencodeMessage
		ms := msgs[id]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Get("id").Str < ms[j].Get("id").Str })
		for _, m := range ms {
			mid := m.Get("id").Str
			om := OpencodeMessage{Info: withIDs(m.Get("data").Str, [][2]string{{"id", mid}, {"sessionID", id}})}
			ps := parts[mid]
			sort.SliceStable(ps, func(i, j int) bool { return ps[i].Get("id").Str < ps[j].Get("id").Str })
			for _, p := range ps {
				om.Parts = append(om.Parts, withIDs(p.Get("data").Str, [][2]string{{"id", p.Get("id").Str}, {"sessionID", id}, {"messageID", mid}}))
			}
			list = append(list, om)
		}
		imps, err := ImportOpencodeTree(info.done(), list)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		out = append(out, imps...)
	}
	return out, nil
}

// withIDs is the JSON object data with the ids first (replacing any it
// holds); data that is not an object stays as it is, to be refused.
func withIDs(data string, ids [][2]string) []byte {
	v := gjson.Parse(data)
	if !gjson.Valid(data) || !v.IsObject() {
		return []byte(data)
	}
	var o jsonObject
	skip := make([]string, 0, len(ids))
	for _, kv := range ids {
		o.strVal(kv[0], kv[1])
		skip = append(skip, kv[0])
	}
	for _, f := range fieldsOf(v, skip...) {
		o.raw(f.Key, string(f.Value))
	}
	return o.done()
}

// ---- whycodes

// whycodesDB reads whycodes' save_to_db tables: a session row (title,
// times, project, usage) and its messages, each the whole message JSON,
// in created_at order as load_from_db reads them; a message without its
// own time takes its row's.
func whycodesDB(rows sqlRows, want func(string) bool) ([]Imported, error) {
	var out []Imported
	for _, sel := range selectedSessions(rows, want, func(a, b gjson.Result) bool { return a.Get("created_at").Str < b.Get("created_at").Str }) {
		id, s, ms := sel.id, sel.row, sel.msgs
		var sh session.Share
		skipped := skipCounter{}
		for _, r := range ms {
			m, err := session.DecodeMessage([]byte(r.Get("content").Str))
			if err != nil {
				skipped.add("message:malformed")
				continue
			}
			if m.CreatedAt == "" {
				if _, ok := parseTime(r.Get("created_at").Str); ok {
					m.CreatedAt = r.Get("created_at").Str
				}
			}
			sh.Messages = append(sh.Messages, m)
		}
		if !hasTurns(&sh) {
			continue
		}
		m := &sh.Meta
		m.Title = s.Get("title").Str
		m.ProjectPath = s.Get("project_path").Str
		m.CreatedAt, m.UpdatedAt = validTime(s.Get("created_at").Str), validTime(s.Get("updated_at").Str)
		m.Usage = session.Usage{InputTokens: s.Get("input_tokens").Uint(), OutputTokens: s.Get("output_tokens").Uint(),
			CacheCreationInputTokens: optU(s.Get("cache_creation_input_tokens")), CacheReadInputTokens: optU(s.Get("cache_read_input_tokens"))}
		m.Extra = append(m.Extra, importedFrom(KindWhycodes, id, jsonObject{}))
		out = append(out, Imported{Share: sh, Skipped: skipped, SourceID: id})
	}
	return out, nil
}

func validTime(s string) string {
	if _, ok := parseTime(s); ok {
		return s
	}
	return ""
}

// sqlTime reads SQLite's own "YYYY-MM-DD HH:MM:SS" (CURRENT_TIMESTAMP,
// UTC) as RFC 3339, and keeps an RFC 3339 time as it is.
func sqlTime(s string) string {
	if _, ok := parseTime(s); ok {
		return s
	}
	if t, err := time.Parse("2006-01-02 15:04:05", s); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	if t, err := time.Parse("2006-01-02 15:04:05.999999999", s); err == nil {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return ""
}

// ---- goose

// gooseDB reads goose's sessions.db: each session row (its name, working
// directory, times, accumulated usage, type and parent) and its messages
// in created_timestamp order. A message's content_json is goose's list of
// content items: text, image, thinking and redactedThinking become blocks,
// toolRequest a tooluse block, toolResponse a tool message (its value's
// text, or its error); other items are kept whole.
func gooseDB(rows sqlRows, want func(string) bool) ([]Imported, error) {
	var out []Imported
	for _, sel := range selectedSessions(rows, want, func(a, b gjson.Result) bool {
		return a.Get("created_timestamp").Int() < b.Get("created_timestamp").Int()
	}) {
		id, s, ms := sel.id, sel.row, sel.msgs
		b := &gooseBuilder{skipped: skipCounter{}, names: toolNames{}}
		for _, r := range ms {
			b.message(r)
		}
		var sh session.Share
		b.l.share(&sh)
		if !hasTurns(&sh) {
			continue
		}
		m := &sh.Meta
		name := s.Get("name").Str
		if name == "" {
			name = s.Get("description").Str
		}
		if t := session.SanitizeTitle(name); t != "" {
			m.Title, m.TitleSource = t, session.TitleGenerated
			if s.Get("user_set_name").Bool() {
				m.TitleSource = session.TitleManual
			}
		}
		m.ProjectPath = s.Get("working_dir").Str
		m.CreatedAt, m.UpdatedAt = sqlTime(s.Get("created_at").String()), sqlTime(s.Get("updated_at").String())
		if m.CreatedAt == "" {
			m.CreatedAt = b.span.first
		}
		if m.UpdatedAt == "" {
			m.UpdatedAt = b.span.last
		}
		in, outTok := s.Get("accumulated_input_tokens"), s.Get("accumulated_output_tokens")
		if in.Type != gjson.Number && outTok.Type != gjson.Number {
			in, outTok = s.Get("input_tokens"), s.Get("output_tokens")
		}
		m.Usage = session.Usage{InputTokens: in.Uint(), OutputTokens: outTok.Uint()}
		src := objectOf(s, "id", "name", "description", "working_dir", "created_at", "updated_at")
		m.Extra = append(m.Extra, importedFrom(KindGoose, id, src))
		out = append(out, Imported{Share: sh, Skipped: b.skipped, SourceID: id, Parent: s.Get("parent_session_id").Str})
	}
	return out, nil
}

type gooseBuilder struct {
	l       linearPath
	skipped skipCounter
	span    timeSpan
	names   toolNames
}

// gooseTime reads created_timestamp: seconds, or milliseconds for the
// values goose itself takes for them (past 10^10).
func gooseTime(v gjson.Result) string {
	if v.Type != gjson.Number {
		return ""
	}
	n := v.Int()
	if n < 10_000_000_000 {
		n *= 1000
	}
	return millisTime(gjson.Parse(fmt.Sprint(n)))
}

func (b *gooseBuilder) message(r gjson.Result) {
	ts := b.span.add(gooseTime(r.Get("created_timestamp")))
	content := gjson.Parse(r.Get("content_json").Str)
	if !content.IsArray() {
		b.skipped.add("message:malformed")
		return
	}
	role := session.RoleUser
	if r.Get("role").Str == "assistant" {
		role = session.RoleAssistant
	}
	var blocks []session.Block
	var results []session.Message
	eachElem(content, func(c gjson.Result) bool {
		switch c.Get("type").Str {
		case "text":
			blocks = append(blocks, session.Block{Type: session.BlockText, Text: c.Get("text").Str, Extra: fieldsOf(c, "type", "text")})
		case "image":
			var src jsonObject
			src.strVal("type", "base64")
			src.strVal("media_type", c.Get("mimeType").Str)
			src.strVal("data", c.Get("data").Str)
			blocks = append(blocks, session.Block{Type: session.BlockImage, Source: src.done()})
		case "thinking":
			blk := session.Block{Type: session.BlockThinking, Text: c.Get("thinking").Str}
			if sig := c.Get("signature"); sig.Type == gjson.String {
				blk.Signature, blk.HasSignature = sig.Str, true
			}
			blocks = append(blocks, blk)
		case "redactedThinking":
			blocks = append(blocks, session.Block{Type: session.BlockRedactedThinking, Data: c.Get("data").Str})
		case "toolRequest":
			call := session.Block{Type: session.BlockToolUse, ID: c.Get("id").Str, Name: c.Get("toolCall.value.name").Str, Input: []byte("{}"),
				Extra: fieldsOf(c, "type", "id", "toolCall")}
			if a := c.Get("toolCall.value.arguments"); a.IsObject() {
				call.Input = compactJSON(a.Raw)
			}
			if st := c.Get("toolCall.status").Str; st != "success" {
				call.Extra = append(call.Extra, session.Field{Key: "goose", Value: compactJSON(`{"toolCall":` + c.Get("toolCall").Raw + `}`)})
			}
			b.names[call.ID] = call.Name
			blocks = append(blocks, call)
		case "toolResponse":
			results = append(results, b.toolResponse(c, ts))
		default:
			blocks = append(blocks, session.Block{Type: "goose_" + c.Get("type").Str, Raw: compactJSON(`{"type":` + string(jsonString("goose_"+c.Get("type").Str)) + `,"item":` + c.Raw + `}`)})
		}
		return true
	})
	for _, t := range results {
		b.l.add(t) // a user message of results answers the calls before it
	}
	if len(blocks) == 0 {
		return
	}
	m := session.Message{Role: role, CreatedAt: ts, Content: session.BlockContent(blocks...)}
	if role == session.RoleUser && len(blocks) == 1 && blocks[0].Type == session.BlockText && len(blocks[0].Extra) == 0 {
		m.Content = session.TextContent(blocks[0].Text)
	}
	if meta := r.Get("metadata_json"); meta.Type == gjson.String && gjson.Valid(meta.Str) && meta.Str != "null" {
		m.Extra = append(m.Extra, session.Field{Key: "goose", Value: compactJSON(`{"metadata":` + meta.Str + `}`)})
	}
	b.l.add(m)
}

func (b *gooseBuilder) toolResponse(c gjson.Result, ts string) session.Message {
	id := c.Get("id").Str
	tm := session.Message{Role: session.RoleTool, ToolCallID: id, Name: b.names[id], CreatedAt: ts}
	res := c.Get("toolResult")
	if res.Get("status").Str == "error" {
		tm.IsError = true
		tm.Content = session.TextContent(res.Get("error").String())
		return tm
	}
	items := res.Get("value")
	if items.IsObject() { // a CallToolResult: {content, isError}
		tm.IsError = items.Get("isError").Bool()
		items = items.Get("content")
	}
	var texts []string
	var other []session.Block
	eachElem(items, func(it gjson.Result) bool {
		switch it.Get("type").Str {
		case "text":
			texts = append(texts, it.Get("text").Str)
		case "image":
			var src jsonObject
			src.strVal("type", "base64")
			src.strVal("media_type", it.Get("mimeType").Str)
			src.strVal("data", it.Get("data").Str)
			other = append(other, session.Block{Type: session.BlockImage, Source: src.done()})
		default:
			other = append(other, session.Block{Type: "goose_" + it.Get("type").Str, Raw: compactJSON(`{"type":` + string(jsonString("goose_"+it.Get("type").Str)) + `,"item":` + it.Raw + `}`)})
		}
		return true
	})
	if len(other) == 0 {
		tm.Content = session.TextContent(strings.Join(texts, "\n"))
		return tm
	}
	var blocks []session.Block
	for _, t := range texts {
		blocks = append(blocks, session.Block{Type: session.BlockText, Text: t})
	}
	tm.Content = session.BlockContent(append(blocks, other...)...)
	return tm
}

// ---- llm

// llmDB reads llm's logs.db. From 0.32 a thread is a conversation: the
// chain of messages from its tip back to the root, each message's parts
// in position order (text, reasoning, tool_call, tool_result, attachment;
// a text that borrows from fragments is rebuilt from its text_ref), its
// turns' usage and times. Before 0.32 a conversation is its responses in
// time order, each a prompt (after the tool results it carried) and the
// reply with its tool calls. A conversation logged in both generations is
// read from the newer.
func llmDB(rows sqlRows, want func(string) bool) ([]Imported, error) {
	var out []Imported
	seen := map[string]bool{}
	if len(rows["threads"]) > 0 {
		imps := llmThreads(rows, want)
		for _, imp := range imps {
			seen[imp.SourceID] = true
		}
		out = append(out, imps...)
	}
	for _, imp := range llmResponses(rows, want) {
		if !seen[imp.SourceID] {
			out = append(out, imp)
		}
	}
	return out, nil
}

func llmThreads(rows sqlRows, want func(string) bool) []Imported {
	msgs := map[string]gjson.Result{}
	for _, m := range rows["messages"] {
		msgs[m.Get("hash").Str] = m
	}
	parts := byColumn(rows["parts"], "message_hash")
	fragments := map[string]string{}
	for _, f := range rows["fragments"] {
		fragments[f.Get("id").String()] = f.Get("content").Str
	}
	turns := byColumn(rows["turns"], "thread_id")
	var out []Imported
	for _, th := range rows["threads"] {
		id := th.Get("id").Str
		if !want(id) {
			continue
		}
		var chain []gjson.Result
		for h, n := th.Get("tip_message_hash").Str, 0; h != "" && n <= len(msgs); n++ {
			m, ok := msgs[h]
			if !ok {
				break
			}
			chain = append(chain, m)
			h = m.Get("parent_hash").Str
		}
		// Times and models by the message a turn ended at, and where it
		// started.
		at, model := map[string]string{}, map[string]string{}
		var usage session.Usage
		skipped := skipCounter{}
		for _, t := range turns[id] {
			ts := t.Get("datetime_utc").Str
			at[t.Get("tip_message_hash").Str] = ts
			if _, ok := at[t.Get("parent_message_hash").Str]; !ok {
				at[t.Get("parent_message_hash").Str] = ts
			}
			model[t.Get("tip_message_hash").Str] = t.Get("model").Str
			usage.Add(session.Usage{InputTokens: t.Get("input_tokens").Uint(), OutputTokens: t.Get("output_tokens").Uint()})
		}
		var sh session.Share
		var span timeSpan
		names := toolNames{}
		for i := len(chain) - 1; i >= 0; i-- {
			m := chain[i]
			hash := m.Get("hash").Str
			ts := span.add(at[hash])
			ps := parts[hash]
			sort.SliceStable(ps, func(a, b int) bool { return ps[a].Get("position").Int() < ps[b].Get("position").Int() })
			var blocks []session.Block
			var results []session.Message
			for _, p := range ps {
				payload := gjson.Parse(p.Get("payload").Str)
				text := p.Get("text").Str
				if p.Get("text").Type != gjson.String {
					text = llmTextRef(payload.Get("text_ref"), fragments)
				}
				switch p.Get("type").Str {
				case "text":
					blocks = append(blocks, session.Block{Type: session.BlockText, Text: text, Extra: fieldsOf(payload, "text_ref")})
				case "reasoning":
					blocks = append(blocks, session.Block{Type: session.BlockThinking, Text: text, Extra: fieldsOf(payload, "text_ref")})
				case "tool_call":
					call := session.Block{Type: session.BlockToolUse, ID: payload.Get("tool_call_id").Str, Name: p.Get("tool_name").Str,
						Input: toolInput(payload.Get("arguments")), Extra: fieldsOf(payload, "tool_call_id", "arguments")}
					names[call.ID] = call.Name
					blocks = append(blocks, call)
				case "tool_result":
					out := payload.Get("output")
					content := text
					if out.Exists() {
						content = out.String()
					}
					callID := payload.Get("tool_call_id").Str
					name := p.Get("tool_name").Str
					if name == "" {
						name = names[callID]
					}
					results = append(results, session.Message{Role: session.RoleTool, ToolCallID: callID, Name: name, CreatedAt: ts,
						IsError: payload.Get("exception").Exists() && payload.Get("exception").Type != gjson.Null,
						Content: session.TextContent(content), Extra: fieldsOf(payload, "tool_call_id", "output")})
				default:
					blocks = append(blocks, session.Block{Type: "llm_" + p.Get("type").Str, Raw: compactJSON(`{"type":` + string(jsonString("llm_"+p.Get("type").Str)) + `,"part":` + p.Raw + `}`)})
				}
			}
			sh.Messages = append(sh.Messages, results...)
			if len(blocks) == 0 {
				continue
			}
			msg := session.Message{CreatedAt: ts, Content: session.BlockContent(blocks...)}
			switch m.Get("role").Str {
			case "assistant":
				msg.Role = session.RoleAssistant
				if md := model[hash]; md != "" {
					msg.Extra = append(msg.Extra, session.Field{Key: "llm", Value: compactJSON(`{"model":` + string(jsonString(md)) + `}`)})
				}
			case "system":
				if len(sh.Messages) == 0 && sh.Meta.SystemPrompt == "" {
					sh.Meta.SystemPrompt = contentText(&msg.Content)
					continue
				}
				msg.Role = session.RoleSystem
			default:
				msg.Role = session.RoleUser
				if len(blocks) == 1 && blocks[0].Type == session.BlockText && len(blocks[0].Extra) == 0 {
					msg.Content = session.TextContent(blocks[0].Text)
				}
			}
			if pm := m.Get("provider_metadata"); pm.Type == gjson.String && gjson.Valid(pm.Str) {
				msg.Extra = append(msg.Extra, session.Field{Key: "llm", Value: compactJSON(`{"provider_metadata":` + pm.Str + `}`)})
			}
			sh.Messages = append(sh.Messages, msg)
		}
		if !hasTurns(&sh) {
			continue
		}
		span.add(th.Get("datetime_utc").Str)
		meta := &sh.Meta
		if t := session.SanitizeTitle(th.Get("name").Str); t != "" {
			meta.Title, meta.TitleSource = t, session.TitleGenerated
		}
		meta.CreatedAt, meta.UpdatedAt = span.first, span.last
		meta.Usage = usage
		var src jsonObject
		if f := th.Get("forked_from"); f.Type == gjson.String {
			src.strVal("forked_from", f.Str)
		}
		meta.Extra = append(meta.Extra, importedFrom(KindLLM, id, src))
		out = append(out, Imported{Share: sh, Skipped: skipped, SourceID: id})
	}
	return out
}

// llmTextRef rebuilds a text that borrows from fragments: its pieces in
// order, each a literal or a fragment's content.
func llmTextRef(ref gjson.Result, fragments map[string]string) string {
	var b strings.Builder
	eachElem(ref, func(p gjson.Result) bool {
		if l := p.Get("literal"); l.Type == gjson.String {
			b.WriteString(l.Str)
		} else if f := p.Get("fragment"); f.Exists() {
			b.WriteString(fragments[f.String()])
		}
		return true
	})
	return b.String()
}

func llmResponses(rows sqlRows, want func(string) bool) []Imported {
	calls := byColumn(rows["tool_calls"], "response_id")
	results := byColumn(rows["tool_results"], "response_id")
	names := map[string]string{}
	for _, c := range rows["conversations"] {
		names[c.Get("id").Str] = c.Get("name").Str
	}
	// A response without a conversation is one of its own.
	convs := map[string][]gjson.Result{}
	var order []string
	for _, r := range rows["responses"] {
		cid := r.Get("conversation_id").Str
		if cid == "" {
			cid = r.Get("id").Str
		}
		if _, ok := convs[cid]; !ok {
			order = append(order, cid)
		}
		convs[cid] = append(convs[cid], r)
	}
	var out []Imported
	for _, cid := range order {
		if !want(cid) {
			continue
		}
		rs := convs[cid]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Get("datetime_utc").Str < rs[j].Get("datetime_utc").Str })
		var sh session.Share
		var span timeSpan
		var usage session.Usage
		toolName := toolNames{}
		for _, r := range rs {
			ts := span.add(r.Get("datetime_utc").Str)
			if sys := r.Get("system").Str; sys != "" && sh.Meta.SystemPrompt == "" && len(sh.Messages) == 0 {
				sh.Meta.SystemPrompt = sys
			}
			for _, tr := range results[r.Get("id").Str] {
				id := tr.Get("tool_call_id").Str
				name := tr.Get("name").Str
				if name == "" {
					name = toolName[id]
				}
				sh.Messages = append(sh.Messages, session.Message{Role: session.RoleTool, ToolCallID: id, Name: name, CreatedAt: ts,
					IsError: tr.Get("exception").Type == gjson.String && tr.Get("exception").Str != "", Content: session.TextContent(tr.Get("output").Str)})
			}
			if p := r.Get("prompt").Str; p != "" {
				sh.Messages = append(sh.Messages, session.Message{Role: session.RoleUser, CreatedAt: ts, Content: session.TextContent(p)})
			}
			var blocks []session.Block
			if t := r.Get("reasoning").Str; t != "" {
				blocks = append(blocks, session.Block{Type: session.BlockThinking, Text: t})
			}
			if t := r.Get("response").Str; t != "" {
				blocks = append(blocks, session.Block{Type: session.BlockText, Text: t})
			}
			for _, c := range calls[r.Get("id").Str] {
				call := session.Block{Type: session.BlockToolUse, ID: c.Get("tool_call_id").Str, Name: c.Get("name").Str, Input: toolInput(c.Get("arguments"))}
				toolName[call.ID] = call.Name
				blocks = append(blocks, call)
			}
			if len(blocks) > 0 {
				var o jsonObject
				o.strVal("response_id", r.Get("id").Str)
				o.strVal("model", r.Get("model").Str)
				for _, col := range []string{"options_json", "response_json", "token_details"} {
					if v := r.Get(col); v.Type == gjson.String && gjson.Valid(v.Str) && v.Str != "null" {
						o.raw(strings.TrimSuffix(col, "_json"), v.Str)
					}
				}
				if d := r.Get("duration_ms"); d.Type == gjson.Number {
					o.raw("duration_ms", d.Raw)
				}
				f, _ := o.field("llm")
				sh.Messages = append(sh.Messages, session.Message{Role: session.RoleAssistant, CreatedAt: ts, Content: session.BlockContent(blocks...), Extra: []session.Field{f}})
			}
			usage.Add(session.Usage{InputTokens: r.Get("input_tokens").Uint(), OutputTokens: r.Get("output_tokens").Uint()})
		}
		if !hasTurns(&sh) {
			continue
		}
		meta := &sh.Meta
		if t := session.SanitizeTitle(names[cid]); t != "" {
			meta.Title, meta.TitleSource = t, session.TitleGenerated
		}
		meta.CreatedAt, meta.UpdatedAt = span.first, span.last
		meta.Usage = usage
		meta.Extra = append(meta.Extra, importedFrom(KindLLM, cid, jsonObject{}))
		out = append(out, Imported{Share: sh, SourceID: cid})
	}
	return out
}
