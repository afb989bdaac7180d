package session

import (
	"math"
	"strings"
	"time"
)

// TitleSource records how a title was chosen; it gates automatic titling.
type TitleSource string

const (
	TitleDefault   TitleSource = "default"
	TitleHeuristic TitleSource = "heuristic"
	TitleGenerated TitleSource = "generated"
	TitleManual    TitleSource = "manual"
)

// Known reports one of whycodes' four sources, the only ones it loads.
func (s TitleSource) Known() bool {
	return s == TitleDefault || s == TitleHeuristic || s == TitleGenerated || s == TitleManual
}

// AllowsHeuristic is true only for Default.
func (s TitleSource) AllowsHeuristic() bool { return s == TitleDefault || s == "" }

// AllowsLLM is true for Default and Heuristic.
func (s TitleSource) AllowsLLM() bool { return s.AllowsHeuristic() || s == TitleHeuristic }

// Usage is provider-reported token usage. Cache fields stay nil until some
// provider reports them.
type Usage struct {
	InputTokens              uint64  `json:"input_tokens"`
	OutputTokens             uint64  `json:"output_tokens"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *uint64 `json:"cache_read_input_tokens,omitempty"`
}

// Add sums other into u.
func (u *Usage) Add(other Usage) {
	u.InputTokens += other.InputTokens
	u.OutputTokens += other.OutputTokens
	u.CacheCreationInputTokens = addOpt(u.CacheCreationInputTokens, other.CacheCreationInputTokens)
	u.CacheReadInputTokens = addOpt(u.CacheReadInputTokens, other.CacheReadInputTokens)
}

// Fits reports whether u.Add(other) keeps every counter in range: one that
// wrapped around would be silently wrong.
func (u Usage) Fits(other Usage) bool {
	return sumFits(u.InputTokens, other.InputTokens) && sumFits(u.OutputTokens, other.OutputTokens) &&
		optFits(u.CacheCreationInputTokens, other.CacheCreationInputTokens) &&
		optFits(u.CacheReadInputTokens, other.CacheReadInputTokens)
}

func sumFits(a, b uint64) bool { return a+b >= a }

func optFits(a, b *uint64) bool { return a == nil || b == nil || sumFits(*a, *b) }

func addOpt(a, b *uint64) *uint64 {
	if b == nil {
		return a
	}
	sum := *b
	if a != nil {
		sum += *a
	}
	return &sum
}

// Total adds every counter; cache tokens count on top of input.
func (u Usage) Total() uint64 {
	t := u.InputTokens + u.OutputTokens
	if u.CacheCreationInputTokens != nil {
		t += *u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens != nil {
		t += *u.CacheReadInputTokens
	}
	return t
}

// IsEmpty is Total() == 0.
func (u Usage) IsEmpty() bool { return u.Total() == 0 }

// Cost is the estimated spend: priced steps add USD, unpriced ones are counted.
type Cost struct {
	USD           float64 `json:"usd"`
	UnpricedSteps uint32  `json:"unpriced_steps"`
}

// Add records one step; nil means the step had no price, never estimated.
func (c *Cost) Add(usd *float64) {
	if usd == nil {
		c.UnpricedSteps++
		return
	}
	c.USD += *usd
}

// Fits reports whether c.Add(usd) keeps the total a finite amount, which
// JSON can hold, and the count of unpriced steps in range.
func (c Cost) Fits(usd *float64) bool {
	if usd == nil {
		return c.UnpricedSteps < math.MaxUint32
	}
	return !math.IsInf(c.USD+*usd, 0) && !math.IsNaN(c.USD+*usd)
}

// Merge adds other's fields, or refuses a total JSON cannot hold (an
// infinite amount, more unpriced steps than the count holds) and changes
// nothing.
func (c *Cost) Merge(other Cost) error {
	usd := c.USD + other.USD
	if math.IsInf(usd, 0) || math.IsNaN(usd) || c.UnpricedSteps+other.UnpricedSteps < c.UnpricedSteps {
		return invalidf("the session's cost would pass what JSON holds")
	}
	c.USD, c.UnpricedSteps = usd, c.UnpricedSteps+other.UnpricedSteps
	return nil
}

// IsEmpty reports a zero cost.
func (c Cost) IsEmpty() bool { return c.USD == 0 && c.UnpricedSteps == 0 }

// Checkpoint is an exploratory checkpoint (conversation only).
type Checkpoint struct {
	KeepUntil uint64 `json:"keep_until"` // whycodes' position of the last kept message
	Seq       uint64 `json:"seq"`        // the node a rewind returns to; 0 for the empty path
	Goal      string `json:"goal"`
	StartedAt string `json:"started_at"`
}

// StreamRules is whycodes' StreamRuleLedger: the user turn counter and the
// turn at which each rule last fired.
type StreamRules struct {
	Turn  uint64            `json:"turn"`
	Fired map[string]uint64 `json:"fired"`
}

// BeginTurn counts one more user turn.
func (l *StreamRules) BeginTurn() {
	if l.Turn < ^uint64(0) {
		l.Turn++
	}
}

// Record marks rule as fired in the current turn.
func (l *StreamRules) Record(rule string) {
	if l.Fired == nil {
		l.Fired = map[string]uint64{}
	}
	l.Fired[rule] = l.Turn
}

// LastFired returns the turn of the rule's last hit.
func (l *StreamRules) LastFired(rule string) (uint64, bool) {
	t, ok := l.Fired[rule]
	return t, ok
}

// IsEmpty is true when no rule has fired.
func (l *StreamRules) IsEmpty() bool { return len(l.Fired) == 0 }

// NamedBranch names a node of the tree.
type NamedBranch struct {
	Name string `json:"name"`
	Seq  uint64 `json:"seq"`
}

// ForkOrigin records where a forked session came from.
type ForkOrigin struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
}

// Meta is everything about a session except its messages. It is stored as
// one small record so that listing never reads a message.
type Meta struct {
	ID               string        `json:"id"`
	Title            string        `json:"title"`
	TitleSource      TitleSource   `json:"title_source"`
	SystemPrompt     string        `json:"system_prompt"`
	ProjectPath      string        `json:"project_path"`
	CreatedAt        string        `json:"created_at"`
	UpdatedAt        string        `json:"updated_at"`
	Usage            Usage         `json:"usage"`
	Cost             Cost          `json:"cost"`
	EditStats        EditStats     `json:"edit_stats"`
	Checkpoint       *Checkpoint   `json:"checkpoint,omitempty"`
	LastRewindReport *string       `json:"last_rewind_report,omitempty"`
	StreamRules      StreamRules   `json:"stream_rules"`
	ForkedFrom       *ForkOrigin   `json:"forked_from,omitempty"`
	Head             uint64        `json:"head"`     // seq of the active leaf; 0 for an empty path
	NextSeq          uint64        `json:"next_seq"` // seqs are never reused
	Branches         []NamedBranch `json:"branches,omitempty"`

	// Cached counts of the active path, so that listing needs no walk.
	MessageCount     uint64 `json:"message_count"`
	UserMessageCount uint64 `json:"user_message_count"`
	Tokens           uint64 `json:"tokens"`        // system prompt + active path estimate
	SystemTokens     uint64 `json:"system_tokens"` // estimate of the system prompt alone

	// Source is where wc-new imported the session from; kept in the store
	// only, never in a share, so that a copy is the session whole.
	Source *ImportSource `json:"import_source,omitempty"`

	// Members of an imported share that we do not interpret (turn_context,
	// instruction_dirs, …), written back on export.
	Extra []Field `json:"-"`

	// Revision is the store's mark of the record this value was read from
	// (0: not read from a store that keeps one): a store shared by many
	// writers commits it only over that same record.
	Revision uint64 `json:"-"`
}

// Touch sets updated_at; every mutation calls it.
func (m *Meta) Touch(now time.Time) { m.UpdatedAt = FormatTime(now) }

// FormatTime is the RFC 3339 form used for every time this package writes.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ValidTime reports an RFC 3339 time that whycodes reads as well: Go's
// parser also takes a comma before the fraction of a second, chrono does
// not, and a share holding one would not load there.
func ValidTime(s string) bool {
	if strings.IndexByte(s, ',') >= 0 {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// BranchNames maps each node a branch ends at to the names of those
// branches ("" for an unnamed one), in the session's order.
func (m *Meta) BranchNames() map[uint64][]string {
	names := map[uint64][]string{}
	for _, b := range m.Branches {
		names[b.Seq] = append(names[b.Seq], b.Name)
	}
	return names
}

// BranchSeq returns the node a branch name points at.
func (m *Meta) BranchSeq(name string) (uint64, bool) {
	for _, b := range m.Branches {
		if b.Name == name {
			return b.Seq, true
		}
	}
	return 0, false
}

// Info is the summary every command prints for a session: whycodes'
// SessionInfo plus what scripts want without a second call.
type Info struct {
	ID               string      `json:"id"`
	Title            string      `json:"title"`
	TitleSource      TitleSource `json:"title_source"`
	ProjectPath      string      `json:"project_path"`
	CreatedAt        string      `json:"created_at"`
	UpdatedAt        string      `json:"updated_at"`
	MessageCount     uint64      `json:"message_count"`
	UserMessageCount uint64      `json:"user_message_count"`
	Tokens           uint64      `json:"tokens"`
	Usage            Usage       `json:"usage"`
	Cost             Cost        `json:"cost"`
	EditStats        EditStats   `json:"edit_stats"`
	Head             uint64      `json:"head"`
	Branches         int         `json:"branches"`
	ForkedFrom       *ForkOrigin `json:"forked_from,omitempty"`
	// Where an imported session came from (ImportSource), for a script to
	// find the sessions of a source; absent for others.
	SourceFormat string `json:"source_format,omitempty"`
	SourceID     string `json:"source_id,omitempty"`
	SourcePath   string `json:"source_path,omitempty"`
}

// Info returns the session's summary.
func (m *Meta) Info() Info {
	in := Info{
		ID: m.ID, Title: m.Title, TitleSource: m.TitleSource, ProjectPath: m.ProjectPath,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		MessageCount: m.MessageCount, UserMessageCount: m.UserMessageCount, Tokens: m.Tokens,
		Usage: m.Usage, Cost: m.Cost, EditStats: m.EditStats,
		Head: m.Head, Branches: len(m.Branches), ForkedFrom: m.ForkedFrom,
	}
	if m.Source != nil || len(m.Extra) > 0 {
		src := m.ImportSource()
		in.SourceFormat, in.SourceID, in.SourcePath = src.Format, src.ID, src.Path
	}
	return in
}
