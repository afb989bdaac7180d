package session

import (
	"strconv"
	"strings"
)

// CountedTools are the tools whose results end with [+N -M] trailers.
var CountedTools = []string{"write", "edit", "apply_patch"}

// EditStats counts lines added and removed by file-editing tools.
type EditStats struct {
	Added       uint64 `json:"added"`
	Removed     uint64 `json:"removed"`
	Approximate bool   `json:"approximate"`
}

// IsEmpty is true when nothing was counted.
func (e EditStats) IsEmpty() bool { return e.Added == 0 && e.Removed == 0 }

// Record folds one tool result into the counts. Results of other tools and
// failed results are ignored; a counted result without a trailer (truncated,
// spilled) marks the counts approximate instead of undercounting, and so does
// any contribution from edit or write, which count whole blocks.
func (e *EditStats) Record(tool, content string, isError bool) {
	if isError || !isCountedTool(tool) {
		return
	}
	added, removed, ok := ParseEditTrailers(content)
	if !ok {
		e.Approximate = true
		return
	}
	e.Added += added
	e.Removed += removed
	if tool != "apply_patch" {
		e.Approximate = true
	}
}

// RebuildEditStats counts the edit stats of a path from its tool results,
// as whycodes rebuilds them from the transcript on load: a tool message
// names its tool, or the call it answers does.
func RebuildEditStats(msgs []Message) EditStats {
	var m Meta
	calls := map[string]string{}
	name := func(id string) string { return calls[id] }
	for i := range msgs {
		msg := msgs[i]
		if msg.Role == RoleTool && msg.Name == "" {
			msg.Name = calls[msg.ToolCallID]
		}
		m.recordEdits(&msg, name)
		for _, b := range msg.Content.Blocks {
			if b.Type == BlockToolUse {
				calls[b.ID] = b.Name
			}
		}
	}
	return m.EditStats
}

func isCountedTool(name string) bool {
	for _, t := range CountedTools {
		if t == name {
			return true
		}
	}
	return false
}

// ParseEditTrailers sums every "[+N -M]" line of content; a patch touching
// several files writes one line per file.
func ParseEditTrailers(content string) (added, removed uint64, ok bool) {
	for line := range strings.Lines(content) {
		a, r, found := parseTrailer(strings.TrimSpace(line))
		if found {
			added += a
			removed += r
			ok = true
		}
	}
	return added, removed, ok
}

func parseTrailer(line string) (added, removed uint64, ok bool) {
	inner, found := strings.CutPrefix(line, "[+")
	if !found {
		return 0, 0, false
	}
	inner, found = strings.CutSuffix(inner, "]")
	if !found {
		return 0, 0, false
	}
	plus, minus, found := strings.Cut(inner, " -")
	if !found {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(plus, 10, 64)
	r, err2 := strconv.ParseUint(minus, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return a, r, true
}
