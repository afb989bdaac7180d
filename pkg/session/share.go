package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// AppendShare appends the whole session as whycodes' share JSON: its fields
// in whycodes' order, the active path as messages and every other path as a
// full copy under branches. The token cache is never written. What
// whycodes cannot load stays in members its serde ignores: a message's
// stored content under "wc_content" (see whycodesView), and, when reading
// the paths back would not number the nodes as t does, the tree under
// "wc_tree" (see appendShareTree).
func AppendShare(dst []byte, m *Meta, t *Tree) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID)
	dst = appendString(append(dst, `,"title":`...), m.Title)
	source := m.TitleSource
	if !source.Known() { // stored before imports refused it: whycodes would not load it
		source = InferTitleSource(m.Title, m.ProjectPath)
	}
	dst = appendString(append(dst, `,"title_source":`...), string(source))
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
	if !rebuildsSame(m, t) {
		dst = appendShareTree(dst, m, t)
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
		dst = msg.appendJSON(dst, true)
	}
	return append(dst, ']')
}

// rebuildsSame reports whether FromShare, reading the share's paths alone,
// makes t again: it numbers nodes in the order the active path and then the
// branches first reach them, merges siblings whose messages are equal, and
// leaves out unnamed branches that repeat the head or an earlier branch.
func rebuildsSame(m *Meta, t *Tree) bool {
	next := uint64(1)
	reached := func(seq uint64) bool {
		for _, n := range t.Path(seq) {
			switch {
			case n.Seq < next:
			case n.Seq == next:
				next++
			default:
				return false
			}
		}
		return seq == 0 || t.Node(seq) != nil
	}
	if !reached(m.Head) {
		return false
	}
	ends := map[uint64]bool{}
	for _, b := range m.Branches {
		if b.Name == "" && (b.Seq == 0 || b.Seq == m.Head || ends[b.Seq]) || !reached(b.Seq) {
			return false
		}
		ends[b.Seq] = true
	}
	if next != uint64(t.Len())+1 || m.NextSeq != next {
		return false // nodes no path reaches, or seqs given out and gone
	}
	for _, kids := range t.children {
		for i := 1; i < len(kids); i++ {
			for j := range i {
				if t.Node(kids[i]).Msg.SameJSON(&t.Node(kids[j]).Msg) {
					return false
				}
			}
		}
	}
	return true
}

// appendShareTree writes the member that makes a share's import number
// every node as t does: the seq of each message of the active path and of
// each branch, in their order, the nodes no path reaches (with their
// parents), and the next seq to give out.
//
//	"wc_tree":{"next_seq":N,"messages":[seq…],"branches":[[seq…]…],
//	           "nodes":[{"seq":S,"parent":P,"message":{…}}…]}
func appendShareTree(dst []byte, m *Meta, t *Tree) []byte {
	reached := map[uint64]bool{}
	seqs := func(dst []byte, leaf uint64) []byte {
		dst = append(dst, '[')
		for i, n := range t.Path(leaf) {
			if i > 0 {
				dst = append(dst, ',')
			}
			reached[n.Seq] = true
			dst = appendUint(dst, n.Seq)
		}
		return append(dst, ']')
	}
	dst = appendUint(append(dst, `,"wc_tree":{"next_seq":`...), m.NextSeq)
	dst = seqs(append(dst, `,"messages":`...), m.Head)
	dst = append(dst, `,"branches":[`...)
	for i, b := range m.Branches {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = seqs(dst, b.Seq)
	}
	dst = append(dst, `],"nodes":[`...)
	first := true
	for i := range t.nodes {
		n := &t.nodes[i]
		if reached[n.Seq] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendUint(append(dst, `{"seq":`...), n.Seq)
		dst = appendUint(append(dst, `,"parent":`...), n.Parent)
		dst = n.Msg.AppendJSON(append(dst, `,"message":`...))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
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

	// exact is a wc share's "wc_tree": the seq of every node, so that the
	// import numbers them as the session that wrote it did.
	exact *exactTree
}

// exactTree is a share's tree with its own numbering, checked whole.
type exactTree struct {
	next      uint64
	heads     []uint64 // the last seq of the active path, then of each branch (0: empty)
	seqs      []uint64 // every node, ascending
	unreached []uint64 // the nodes no path holds
	parent    map[uint64]uint64
	msg       map[uint64]*Message
}

// Unreached returns the messages of a wc share's nodes that no path holds.
func (sh *Share) Unreached() []Message {
	if sh.exact == nil {
		return nil
	}
	out := make([]Message, 0, len(sh.exact.unreached))
	for _, seq := range sh.exact.unreached {
		out = append(out, *sh.exact.msg[seq])
	}
	return out
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
	"wc_tree":     true,
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
	if err != nil {
		return sh, err
	}
	if wt := doc.Get("wc_tree"); wt.Exists() && wt.Type != gjson.Null {
		if sh.exact, err = decodeExactTree(wt, &sh); err != nil {
			return sh, invalidf("wc_tree: %v", err)
		}
	}
	return sh, nil
}

// decodeExactTree reads a share's wc_tree against its paths: every seq of
// a path names one node, with one parent and one message wherever it
// appears, and every node comes after its parent.
func decodeExactTree(wt gjson.Result, sh *Share) (*exactTree, error) {
	if !wt.IsObject() {
		return nil, invalidf("must be an object")
	}
	next, ok := WholeNumber(wt.Get("next_seq"))
	if !ok {
		return nil, invalidf("next_seq must be a whole number")
	}
	x := &exactTree{next: next, parent: map[uint64]uint64{}, msg: map[uint64]*Message{}}
	add := func(seq, parent uint64, m *Message) error {
		switch {
		case seq == 0 || seq >= next:
			return invalidf("node %d is not between 1 and next_seq %d", seq, next)
		case parent >= seq:
			return invalidf("node %d comes before its parent %d", seq, parent)
		}
		if old, seen := x.msg[seq]; seen {
			if x.parent[seq] != parent || !old.SameJSON(m) {
				return invalidf("node %d differs between two paths", seq)
			}
			return nil
		}
		x.parent[seq], x.msg[seq] = parent, m
		x.seqs = append(x.seqs, seq)
		return nil
	}
	path := func(v gjson.Result, msgs []Message, what string) error {
		if !v.IsArray() || len(v.Array()) != len(msgs) {
			return invalidf("%s must list a seq for each of its %d messages", what, len(msgs))
		}
		var parent uint64
		for i, s := range v.Array() {
			seq, ok := WholeNumber(s)
			if !ok {
				return invalidf("%s: seqs must be whole numbers", what)
			}
			if err := add(seq, parent, &msgs[i]); err != nil {
				return err
			}
			parent = seq
		}
		x.heads = append(x.heads, parent)
		return nil
	}
	if err := path(wt.Get("messages"), sh.Messages, "messages"); err != nil {
		return nil, err
	}
	branches := wt.Get("branches")
	if !branches.IsArray() || len(branches.Array()) != len(sh.Branches) {
		return nil, invalidf("branches must list the seqs of each of the %d branches", len(sh.Branches))
	}
	for i, b := range branches.Array() {
		if err := path(b, sh.Branches[i].Messages, fmt.Sprintf("branch %d", i+1)); err != nil {
			return nil, err
		}
	}
	nodes := wt.Get("nodes")
	if nodes.Exists() && !nodes.IsArray() {
		return nil, invalidf("nodes must be an array")
	}
	for i, n := range nodes.Array() {
		seq, ok1 := WholeNumber(n.Get("seq"))
		parent, ok2 := WholeNumber(n.Get("parent"))
		if !ok1 || !ok2 || !n.Get("message").IsObject() {
			return nil, invalidf("node %d needs a seq, a parent and a message", i+1)
		}
		if _, dup := x.msg[seq]; dup {
			return nil, invalidf("node %d appears twice", seq)
		}
		m, err := decodeMessage(n.Get("message"))
		if err != nil {
			return nil, invalidf("node %d: %v", seq, err)
		}
		if err := add(seq, parent, &m); err != nil {
			return nil, err
		}
		x.unreached = append(x.unreached, seq)
	}
	for _, seq := range x.seqs {
		if p := x.parent[seq]; p != 0 && x.msg[p] == nil {
			return nil, invalidf("node %d's parent %d is not in the tree", seq, p)
		}
	}
	slices.Sort(x.seqs)
	if cp := sh.Meta.Checkpoint; cp != nil && !sh.checkpointByIndex && cp.Seq != 0 && x.msg[cp.Seq] == nil {
		return nil, invalidf("the checkpoint's node %d is not in the tree", cp.Seq)
	}
	return x, nil
}

// WholeNumber reads a JSON number written as seqs are: digits alone, with
// no leading zero.
func WholeNumber(v gjson.Result) (uint64, bool) {
	if v.Type != gjson.Number || v.Raw == "" || v.Raw[0] == '0' && len(v.Raw) > 1 {
		return 0, false
	}
	for _, c := range []byte(v.Raw) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(v.Raw, 10, 64)
	return n, err == nil
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
		if k.Str == "messages" || k.Str == "branches" || k.Str == "id" || k.Str == "token_cache" || k.Str == "wc_tree" {
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
			if !ValidTime(t) {
				return invalidf("share time %q is not RFC 3339", t)
			}
		}
	}
	if cp := typed.Checkpoint; cp != nil && !ValidTime(cp.StartedAt) {
		return invalidf("the checkpoint's started_at %q is not RFC 3339", cp.StartedAt)
	}
	if typed.TitleSource != "" && !typed.TitleSource.Known() { // whycodes would not load the session
		return invalidf("title_source %q is not default, heuristic, generated or manual", typed.TitleSource)
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
	if sh.exact != nil {
		return fromExactShare(sh, m, untitled)
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
	m.finishImport(b.next, headNode, sh.Messages, sh.paths(), untitled)
	return m, b.nodes
}

// paths is the share's active path, then each branch's.
func (sh *Share) paths() [][]Message {
	paths := [][]Message{sh.Messages}
	for _, br := range sh.Branches {
		paths = append(paths, br.Messages)
	}
	return paths
}

// finishImport completes a share's metadata once its nodes are built: the
// next seq, the counts of the system prompt and of the path to head, and
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

// fromExactShare is FromShare of a share with a wc_tree: every node keeps
// its seq, every branch its place.
func fromExactShare(sh *Share, m Meta, untitled bool) (Meta, []Node) {
	x := sh.exact
	nodes := make([]Node, 0, len(x.seqs))
	index := make(map[uint64]int, len(x.seqs))
	for _, seq := range x.seqs {
		var parent *Node
		if p := x.parent[seq]; p != 0 {
			parent = &nodes[index[p]]
		}
		index[seq] = len(nodes)
		nodes = append(nodes, Child(parent, seq, *x.msg[seq]))
	}
	m.Branches = nil
	for i, b := range sh.Branches {
		m.Branches = append(m.Branches, NamedBranch{Name: b.Name, Seq: x.heads[i+1]})
	}
	head := x.heads[0]
	if sh.checkpointByIndex {
		m.Checkpoint.Seq = head
		if path := pathSeqs(x, head); m.Checkpoint.KeepUntil < uint64(len(path)) {
			m.Checkpoint.Seq = path[m.Checkpoint.KeepUntil]
		}
	}
	var headNode *Node
	if head != 0 {
		headNode = &nodes[index[head]]
	}
	if !sh.editStatsGiven {
		m.EditStats = RebuildEditStats(sh.Messages)
	}
	m.finishImport(x.next, headNode, sh.Messages, sh.paths(), untitled)
	return m, nodes
}

// pathSeqs is the seqs from the root to seq.
func pathSeqs(x *exactTree, seq uint64) []uint64 {
	var rev []uint64
	for ; seq != 0; seq = x.parent[seq] {
		rev = append(rev, seq)
	}
	slices.Reverse(rev)
	return rev
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
