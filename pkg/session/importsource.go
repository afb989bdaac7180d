package session

import (
	"bytes"
	"encoding/json"
	"time"
)

// Where an imported session came from, and bringing it up to date with its
// source (issue 21). Importers name the source in the share's
// "imported_from" member ({"format", "id", "source"}), which a share of
// the session carries on; wc-new records the source it read (Meta.Source:
// format, id, the file's path and what the import counted), so that the
// same source imported again is found, and --update adds only what the
// source gained.

const importedFromKey = "imported_from"

// ImportSource names a session's source: its format, the source's own
// session id, and the file it was read from.
type ImportSource struct {
	Format string `json:"format"`
	ID     string `json:"id,omitempty"`
	Path   string `json:"path,omitempty"`
	// Usage is the source's usage as of the last import, which --update
	// adds the growth of.
	Usage *Usage `json:"usage,omitempty"`
}

func (m *Meta) importedFrom() json.RawMessage {
	for i := range m.Extra {
		if m.Extra[i].Key == importedFromKey {
			return m.Extra[i].Value
		}
	}
	return nil
}

// ImportSource is the session's source: the one wc-new recorded, or else
// what its imported_from member names (a session imported before wc
// recorded it, or the share of an imported session); the zero value for a
// session that was not imported.
func (m *Meta) ImportSource() ImportSource {
	if m.Source != nil {
		return *m.Source
	}
	return m.SharedSource()
}

// SharedSource is the source a share's imported_from member names, for
// the share of an imported session: the source a copy of it stands for.
func (m *Meta) SharedSource() ImportSource {
	var src ImportSource
	if raw := m.importedFrom(); raw != nil {
		_ = json.Unmarshal(raw, &src) // a member of another shape names no source
	}
	return ImportSource{Format: src.Format, ID: src.ID}
}

// RecordImport records that the session was imported from the source
// named format and id, read from path (empty for stdin), and the usage the
// import counted.
func (m *Meta) RecordImport(format, id, path string, usage Usage) {
	u := usage
	m.Source = &ImportSource{Format: format, ID: id, Path: path, Usage: &u}
}

// UpdateResult is what UpdateFromShare did.
type UpdateResult struct {
	Nodes    []Node // the new nodes, parents first
	Added    int    // messages added to the active path
	Diverged bool   // the source no longer starts with the stored path: the old head is kept as a branch
}

// UpdateFromShare brings a session imported from a source up to date with
// a new import of that source, sh: the messages of sh's active path past
// its longest common prefix with the session's active path (path, root
// first) become new nodes under the last shared one, and the head moves to
// the last of them. When the stored path went further than the shared
// prefix (the source was rewound or compacted), the old head stays as a
// branch: nothing stored is lost; unless the source only completed the
// reply it was writing when it was read (completedSince). Usage grows by what the source's grew
// since the last import. Nothing changes when the source added nothing.
func UpdateFromShare(m *Meta, path []Node, sh *Share, now time.Time) UpdateResult {
	k := 0
	for k < len(path) && k < len(sh.Messages) && bytes.Equal(path[k].Msg.AppendJSON(nil), sh.Messages[k].AppendJSON(nil)) {
		k++
	}
	var res UpdateResult
	if k == len(sh.Messages) {
		return res
	}
	var parent *Node
	if k > 0 {
		parent = &path[k-1]
	}
	for _, msg := range sh.Messages[k:] {
		n := Child(parent, m.NextSeq, msg)
		m.NextSeq++
		res.Nodes = append(res.Nodes, n)
		parent = &res.Nodes[len(res.Nodes)-1]
	}
	res.Added = len(res.Nodes)
	res.Diverged = k < len(path) && !completedSince(path[k:], sh.Messages[k:])
	m.MoveHead(parent, res.Diverged)
	src := m.ImportSource()
	if src.Usage != nil {
		if g := usageGrowth(*src.Usage, sh.Meta.Usage); m.Usage.Fits(g) {
			m.Usage.Add(g)
		}
	}
	m.RecordImport(src.Format, src.ID, src.Path, sh.Meta.Usage)
	if sh.Meta.UpdatedAt != "" && earlierTime(m.UpdatedAt, sh.Meta.UpdatedAt) {
		m.UpdatedAt = sh.Meta.UpdatedAt
	} else {
		m.Touch(now)
	}
	return res
}

// completedSince reports a stored path's end that the source has only
// written further since: a file read while the agent was writing a reply
// (a Claude Code response is a line per block, its tool results between
// them; a Codex step a line per item, and its token count after them)
// gives a reply whose blocks begin the source's, then the messages that
// followed it unchanged.
// Its nodes are a copy of what the source goes on to hold: the new path
// replaces them, and no branch keeps the partial copy.
func completedSince(stored []Node, src []Message) bool {
	if len(stored) > len(src) {
		return false
	}
	first, grown := &stored[0].Msg, &src[0]
	if first.Role != RoleAssistant || grown.Role != RoleAssistant || first.Kind != grown.Kind ||
		!first.Content.IsBlocks || !grown.Content.IsBlocks || len(first.Content.Blocks) > len(grown.Content.Blocks) {
		return false
	}
	for i := range first.Content.Blocks {
		if !bytes.Equal(first.Content.Blocks[i].AppendJSON(nil), grown.Content.Blocks[i].AppendJSON(nil)) {
			return false
		}
	}
	for i := 1; i < len(stored); i++ {
		if !bytes.Equal(stored[i].Msg.AppendJSON(nil), src[i].AppendJSON(nil)) {
			return false
		}
	}
	return true
}

// usageGrowth is what was added from old to cur, member by member; a
// counter that shrank (a source rewritten) adds nothing.
func usageGrowth(old, cur Usage) Usage {
	grow := func(a, b uint64) uint64 {
		if b > a {
			return b - a
		}
		return 0
	}
	g := Usage{InputTokens: grow(old.InputTokens, cur.InputTokens), OutputTokens: grow(old.OutputTokens, cur.OutputTokens)}
	opt := func(a, b *uint64) *uint64 {
		if b == nil {
			return nil
		}
		var av uint64
		if a != nil {
			av = *a
		}
		v := grow(av, *b)
		return &v
	}
	g.CacheCreationInputTokens = opt(old.CacheCreationInputTokens, cur.CacheCreationInputTokens)
	g.CacheReadInputTokens = opt(old.CacheReadInputTokens, cur.CacheReadInputTokens)
	return g
}
