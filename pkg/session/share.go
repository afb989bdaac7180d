package session

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/tidwall/gjson"
)

// AppendShare appends the whole session as whycodes' share JSON: its fields
// in whycodes' order, the active path as messages and every other path as a
// full copy under branches. The token cache is never written.
func AppendShare(dst []byte, m *Meta, t *Tree) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID)
	dst = appendString(append(dst, `,"title":`...), m.Title)
	dst = appendString(append(dst, `,"title_source":`...), string(m.TitleSource))
	dst = append(dst, `,"messages":`...)
	dst = appendMessages(dst, messagesOf(t.Path(m.Head)))
	dst = append(dst, `,"branches":[`...)
	for i, b := range Branches(m, t) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if b.HasName {
			dst = appendString(append(dst, `"name":`...), b.Name)
			dst = append(dst, ',')
		}
		dst = append(dst, `"messages":`...)
		dst = appendMessages(dst, b.Messages)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	dst = appendString(append(dst, `,"system_prompt":`...), m.SystemPrompt)
	dst = appendString(append(dst, `,"project_path":`...), m.ProjectPath)
	dst = appendString(append(dst, `,"created_at":`...), m.CreatedAt)
	dst = appendString(append(dst, `,"updated_at":`...), m.UpdatedAt)
	dst = appendJSONValue(append(dst, `,"usage":`...), m.Usage)
	dst = append(dst, `,"cost":{"usd":`...)
	dst = appendFloat(dst, m.Cost.USD)
	dst = append(dst, `,"unpriced_steps":`...)
	dst = appendUint(dst, uint64(m.Cost.UnpricedSteps))
	dst = append(dst, '}')
	dst = appendJSONValue(append(dst, `,"edit_stats":`...), m.EditStats)
	if m.Checkpoint != nil {
		// Written by hand, like every string here: encoding/json would
		// HTML-escape the goal, which serde_json does not.
		dst = append(dst, `,"checkpoint":{"keep_until":`...)
		dst = appendUint(dst, m.Checkpoint.KeepUntil)
		dst = append(dst, `,"seq":`...)
		dst = appendUint(dst, m.Checkpoint.Seq)
		dst = appendString(append(dst, `,"goal":`...), m.Checkpoint.Goal)
		dst = appendString(append(dst, `,"started_at":`...), m.Checkpoint.StartedAt)
		dst = append(dst, '}')
	}
	if m.LastRewindReport != nil {
		dst = appendString(append(dst, `,"last_rewind_report":`...), *m.LastRewindReport)
	}
	dst = append(dst, `,"stream_rules":`...)
	dst = appendStreamRules(dst, &m.StreamRules)
	if m.ForkedFrom != nil {
		dst = appendString(append(dst, `,"forked_from":{"id":`...), m.ForkedFrom.ID)
		dst = appendUint(append(dst, `,"seq":`...), m.ForkedFrom.Seq)
		dst = append(dst, '}')
	}
	dst = appendExtra(dst, m.Extra)
	return append(dst, '}')
}

func appendMessages(dst []byte, msgs []*Message) []byte {
	dst = append(dst, '[')
	for i, msg := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = msg.AppendJSON(dst)
	}
	return append(dst, ']')
}

func appendStreamRules(dst []byte, l *StreamRules) []byte {
	dst = append(dst, `{"turn":`...)
	dst = appendUint(dst, l.Turn)
	dst = append(dst, `,"fired":{`...)
	// Sorted by key, like whycodes' BTreeMap.
	for i, k := range slices.Sorted(maps.Keys(l.Fired)) {
		dst = appendKey(dst, i == 0, k)
		dst = appendUint(dst, l.Fired[k])
	}
	return append(dst, "}}"...)
}

// appendJSONValue encodes plain structs (no strings that need care beyond
// encoding/json's).
func appendJSONValue(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("session: " + err.Error()) // only called with plain data
	}
	return append(dst, b...)
}

// Share is a decoded share document.
type Share struct {
	Meta     Meta // everything but id, head and counts
	Messages []Message
	Branches []SharedBranch

	// A whycodes checkpoint gives only a position on the active path; wc's
	// also gives the node.
	checkpointByIndex bool
	// Edit stats a share gives are kept; without them they are counted
	// from the active path, as whycodes rebuilds them on load.
	editStatsGiven bool

	// A tree share (TreeShare) holds every node once in Messages instead
	// of a copy of each path from the root.
	parents   []int
	treeHead  int
	treeNames map[int][]string
}

// TreeShare is the share of a whole tree: msgs in an order where a parent
// comes before its children, parents[i] the index of msgs[i]'s parent (-1
// for a root), head the index of the head node (-1: the empty path). FromShare
// builds its nodes one for one, where a share's copy of every path from
// the root would cost the square of a long session with many branches.
// names holds the session's branches, by the index of the node each ends
// at ("" for an unnamed one); with nil names every leaf but the head's
// becomes an unnamed branch.
func TreeShare(m Meta, msgs []Message, parents []int, head int, names map[int][]string) Share {
	return Share{Meta: m, Messages: msgs, parents: parents, treeHead: head, treeNames: names}
}

// SharedBranch is one entry of a share's branches.
type SharedBranch struct {
	Name     string
	HasName  bool
	Messages []Message
}

var shareKnown = map[string]bool{
	"id": true, "title": true, "title_source": true, "messages": true, "branches": true,
	"system_prompt": true, "project_path": true, "created_at": true, "updated_at": true,
	"usage": true, "cost": true, "edit_stats": true, "checkpoint": true,
	"last_rewind_report": true, "stream_rules": true, "forked_from": true,
	// whycodes keeps its token cache private, but accept it in case.
	"token_cache": true,
}

// DecodeShare reads a whycodes or wc share: an object with messages, or a
// bare array of messages. raw must be valid JSON.
func DecodeShare(raw []byte) (Share, error) {
	var sh Share
	if err := CheckNesting(raw); err != nil {
		return sh, err
	}
	doc := gjson.ParseBytes(raw)
	if doc.IsArray() {
		msgs, err := decodeMessageList(doc, "message")
		sh.Messages = msgs
		return sh, err
	}
	if !doc.IsObject() {
		return sh, invalidf("a share must be a JSON object with messages, not %s", describe(doc))
	}
	msgs := doc.Get("messages")
	if !msgs.IsArray() {
		return sh, invalidf("a share needs a messages array")
	}
	var err error
	if sh.Messages, err = decodeMessageList(msgs, "message"); err != nil {
		return sh, err
	}
	if err = decodeShareMeta(doc, &sh.Meta); err != nil {
		return sh, err
	}
	sh.editStatsGiven = doc.Get("edit_stats").IsObject()
	sh.checkpointByIndex = sh.Meta.Checkpoint != nil && !doc.Get("checkpoint.seq").Exists()
	br := doc.Get("branches")
	if br.Exists() && br.Type != gjson.Null && !br.IsArray() {
		return sh, invalidf("branches must be an array")
	}
	if !br.IsArray() { // absent or null; ForEach would call back once for null
		return sh, nil
	}
	i := 0
	br.ForEach(func(_, b gjson.Result) bool {
		i++
		if !b.IsObject() || !b.Get("messages").IsArray() {
			err = invalidf("branch %d needs a messages array", i)
			return false
		}
		sb := SharedBranch{}
		if name := b.Get("name"); name.Type == gjson.String {
			sb.Name, sb.HasName = name.Str, true
		}
		if sb.Messages, err = decodeMessageList(b.Get("messages"), "branch message"); err != nil {
			err = invalidf("branch %d: %v", i, err)
			return false
		}
		sh.Branches = append(sh.Branches, sb)
		return true
	})
	return sh, err
}

func decodeMessageList(list gjson.Result, what string) ([]Message, error) {
	var out []Message
	var err error
	i := 0
	list.ForEach(func(_, v gjson.Result) bool {
		i++
		var msg Message
		if msg, err = decodeMessage(v); err != nil {
			err = invalidf("%s %d: %v", what, i, err)
			return false
		}
		out = append(out, msg)
		return true
	})
	return out, err
}

func decodeShareMeta(doc gjson.Result, m *Meta) error {
	var typed struct {
		Title            *string      `json:"title"`
		TitleSource      TitleSource  `json:"title_source"`
		SystemPrompt     string       `json:"system_prompt"`
		ProjectPath      string       `json:"project_path"`
		CreatedAt        string       `json:"created_at"`
		UpdatedAt        string       `json:"updated_at"`
		Usage            *Usage       `json:"usage"`
		Cost             *Cost        `json:"cost"`
		EditStats        *EditStats   `json:"edit_stats"`
		Checkpoint       *Checkpoint  `json:"checkpoint"`
		LastRewindReport *string      `json:"last_rewind_report"`
		StreamRules      *StreamRules `json:"stream_rules"`
		ForkedFrom       *ForkOrigin  `json:"forked_from"`
	}
	// Decode only the known members: messages are already done.
	var slim []byte
	slim = append(slim, '{')
	first := true
	doc.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "messages" || k.Str == "branches" || k.Str == "id" || k.Str == "token_cache" {
			return true
		}
		if !shareKnown[k.Str] {
			m.Extra = append(m.Extra, rawField(k.Str, v))
			return true
		}
		slim = appendKey(slim, first, k.Str)
		slim = append(slim, v.Raw...)
		first = false
		return true
	})
	slim = append(slim, '}')
	if err := json.Unmarshal(slim, &typed); err != nil {
		return invalidf("share metadata: %v", jsonErrText(err))
	}
	for _, t := range []string{typed.CreatedAt, typed.UpdatedAt} {
		if t != "" {
			if _, err := time.Parse(time.RFC3339Nano, t); err != nil {
				return invalidf("share time %q is not RFC 3339", t)
			}
		}
	}
	if typed.Title != nil {
		m.Title = *typed.Title
	}
	m.TitleSource = typed.TitleSource
	m.SystemPrompt, m.ProjectPath = typed.SystemPrompt, typed.ProjectPath
	m.CreatedAt, m.UpdatedAt = typed.CreatedAt, typed.UpdatedAt
	if typed.Usage != nil {
		m.Usage = *typed.Usage
	}
	if typed.Cost != nil {
		m.Cost = *typed.Cost
	}
	if typed.EditStats != nil {
		m.EditStats = *typed.EditStats
	}
	if typed.StreamRules != nil {
		m.StreamRules = *typed.StreamRules
	}
	m.Checkpoint, m.LastRewindReport, m.ForkedFrom = typed.Checkpoint, typed.LastRewindReport, typed.ForkedFrom
	return nil
}

func jsonErrText(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return te.Field + " has the wrong type (" + te.Value + ")"
	}
	return err.Error()
}

// FromShare builds a new session from a share: the active path and every
// branch become one tree whose common prefixes share nodes. Times, titles,
// usage and the rest are kept; only the id is new. Missing times become now.
func FromShare(sh *Share, id string, now time.Time) (Meta, []Node) {
	m := sh.Meta
	m.ID = id
	stamp := FormatTime(now)
	if m.CreatedAt == "" {
		m.CreatedAt = stamp
	}
	if m.UpdatedAt == "" {
		m.UpdatedAt = m.CreatedAt
	}
	untitled := m.Title == ""
	if untitled {
		m.Title, m.TitleSource = DefaultTitle(m.ProjectPath, id), TitleDefault
	}
	if m.TitleSource == "" {
		m.TitleSource = InferTitleSource(m.Title, m.ProjectPath)
	}
	if sh.parents != nil {
		return fromTreeShare(sh, m, untitled)
	}
	b := newTreeBuilder()
	head := b.addPath(sh.Messages)
	m.Branches = nil
	for _, br := range sh.Branches {
		leaf := b.addPath(br.Messages)
		switch {
		case br.Name != "":
			m.Branches = append(m.Branches, NamedBranch{Name: br.Name, Seq: leaf})
		case leaf != 0 && leaf != head && !m.hasBranchAt(leaf): // an unnamed copy of a kept path adds nothing
			m.Branches = append(m.Branches, NamedBranch{Seq: leaf})
		}
	}
	if sh.checkpointByIndex {
		m.Checkpoint.Seq = head
		if path := b.path(head); m.Checkpoint.KeepUntil < uint64(len(path)) {
			m.Checkpoint.Seq = path[m.Checkpoint.KeepUntil]
		}
	}
	var headNode *Node
	if head != 0 {
		headNode = b.node(head)
	}
	if !sh.editStatsGiven {
		m.EditStats = RebuildEditStats(sh.Messages)
	}
	paths := [][]Message{sh.Messages}
	for _, br := range sh.Branches {
		paths = append(paths, br.Messages)
	}
	m.finishImport(b.next, headNode, sh.Messages, paths, untitled)
	return m, b.nodes
}

// finishImport completes a share's metadata once its nodes are built: the
// next seq, the counts of the system prompt and of the path to head, and,
// a title: for a source without one, from the first real prompt of its
// paths; for a share still on a placeholder (a legacy "New session - …",
// a "project-ab"), from the first user text of its active path, as
// whycodes' resume does.
func (m *Meta) finishImport(next uint64, head *Node, active []Message, paths [][]Message, untitled bool) {
	m.NextSeq = next
	systemPrompt := m.SystemPrompt
	m.Tokens, m.SystemTokens = 0, 0
	m.SetSystemPrompt(systemPrompt)
	m.SetHead(head)
	if untitled {
		m.titleFromFirstPrompt(paths...)
		return
	}
	m.UpgradeTitleFromHistory(active)
}

// fromTreeShare is FromShare of a TreeShare: node i gets seq i+1.
func fromTreeShare(sh *Share, m Meta, untitled bool) (Meta, []Node) {
	nodes := make([]Node, 0, len(sh.Messages))
	hasChild := make([]bool, len(sh.Messages))
	for i := range sh.Messages {
		var parent *Node
		if p := sh.parents[i]; p >= 0 {
			parent, hasChild[p] = &nodes[p], true
		}
		nodes = append(nodes, Child(parent, uint64(i)+1, sh.Messages[i]))
	}
	m.Branches = nil
	for i := range nodes {
		for _, name := range sh.treeNames[i] {
			m.Branches = append(m.Branches, NamedBranch{Name: name, Seq: nodes[i].Seq})
		}
		if sh.treeNames == nil && !hasChild[i] && i != sh.treeHead {
			m.Branches = append(m.Branches, NamedBranch{Seq: nodes[i].Seq})
		}
	}
	m.Checkpoint = nil // a share's checkpoint names a node of its own numbering
	var head *Node
	var path []Message
	if len(nodes) > 0 && sh.treeHead >= 0 {
		head = &nodes[sh.treeHead]
		for _, n := range NewTree(nodes).Path(head.Seq) {
			path = append(path, n.Msg)
		}
	}
	if !sh.editStatsGiven {
		m.EditStats = RebuildEditStats(path)
	}
	// The nodes are in the source's order: the first real prompt among
	// them is the first of the whole tree.
	m.finishImport(uint64(len(nodes))+1, head, path, [][]Message{sh.Messages}, untitled)
	return m, nodes
}
