package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// metaPieces are the strings metadata is made of, with everything
// encoding/json escapes or replaces.
var metaPieces = []string{
	"", "fix the login test", "/home/dev/src/api", "2026-08-21T12:00:00.123456789Z",
	"<script>a && b</script>", "line\u2028para\u2029", "bad \xff\xfe utf-8", "\xed\xa0\x80",
	"tab\tnl\ncr\rbs\bff\f\x01\x1f\x7f", "é 中文 😀", `"quoted" \ back\slash`, "/ slash",
}

func randomMetaString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(4) {
		b.WriteString(metaPieces[rng.IntN(len(metaPieces))])
	}
	return b.String()
}

var metaFloats = []float64{0, math.Copysign(0, -1), 0.1, 1.5, 3, 1e-6, 9.99e-7, 1e-7, 1.25e-300,
	123456.789, 1e20, 1e21, 1.5e300, -0.000123, -42.42, math.MaxFloat64, math.SmallestNonzeroFloat64}

func randomMeta(rng *rand.Rand) session.Meta {
	s := func() string { return randomMetaString(rng) }
	u := func() uint64 {
		switch rng.IntN(3) {
		case 0:
			return 0
		case 1:
			return rng.Uint64N(1000)
		}
		return rng.Uint64()
	}
	m := session.Meta{
		ID: s(), Title: s(), TitleSource: session.TitleSource(s()), SystemPrompt: s(), ProjectPath: s(),
		CreatedAt: s(), UpdatedAt: s(),
		Usage:     session.Usage{InputTokens: u(), OutputTokens: u()},
		Cost:      session.Cost{USD: metaFloats[rng.IntN(len(metaFloats))], UnpricedSteps: uint32(u())},
		EditStats: session.EditStats{Added: u(), Removed: u(), Approximate: rng.IntN(2) == 0},
		Head:      u(), NextSeq: u(), MessageCount: u(), UserMessageCount: u(), Tokens: u(), SystemTokens: u(),
	}
	if rng.IntN(2) == 0 {
		v := u()
		m.Usage.CacheCreationInputTokens = &v
	}
	if rng.IntN(2) == 0 {
		v := u()
		m.Usage.CacheReadInputTokens = &v
	}
	if rng.IntN(3) == 0 {
		m.Checkpoint = &session.Checkpoint{KeepUntil: u(), Seq: u(), Goal: s(), StartedAt: s()}
	}
	if rng.IntN(3) == 0 {
		r := s()
		m.LastRewindReport = &r
	}
	m.StreamRules.Turn = u()
	switch rng.IntN(3) {
	case 0: // nil: encodes as null
	case 1:
		m.StreamRules.Fired = map[string]uint64{}
	default:
		m.StreamRules.Fired = map[string]uint64{}
		for range 1 + rng.IntN(4) {
			m.StreamRules.Fired[s()] = u()
		}
	}
	if rng.IntN(3) == 0 {
		m.ForkedFrom = &session.ForkOrigin{ID: s(), Seq: u()}
	}
	for range rng.IntN(4) {
		m.Branches = append(m.Branches, session.NamedBranch{Name: s(), Seq: u()})
	}
	if rng.IntN(3) == 0 {
		m.Source = &session.ImportSource{Format: s(), ID: s(), Path: s()}
		if rng.IntN(2) == 0 {
			m.Source.Usage = &session.Usage{InputTokens: u(), OutputTokens: u()}
		}
	}
	if rng.IntN(3) == 0 {
		values := []string{`1`, `"x <&> y"`, `[1, 2, {"a": null}]`, `{"nested": {"k": "\u00e9"}}`, `true`}
		for i := range 1 + rng.IntN(3) {
			m.Extra = append(m.Extra, session.Field{Key: []string{"turn_context", "instruction_dirs", "k<"}[i], Value: json.RawMessage(values[rng.IntN(len(values))])})
		}
	}
	return m
}

// The record's bytes are those encoding/json wrote for session.Meta before
// the codec was written by hand (HTML-escaped, invalid UTF-8 as \ufffd,
// floats as strconv's shortest form), so that every store reads the same.
func TestMetaRecordBytes(t *testing.T) {
	five := uint64(5)
	r := "rewound <b>"
	m := session.Meta{ID: "3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", Title: "a <b> & \"c\"\u2028\xff", TitleSource: session.TitleManual,
		SystemPrompt: "tab\tnl\n\x01é", ProjectPath: "/p", CreatedAt: "2026-08-21T12:00:00Z", UpdatedAt: "2026-08-21T12:00:01Z",
		Usage: session.Usage{InputTokens: 1 << 62, OutputTokens: 2, CacheReadInputTokens: &five},
		Cost:  session.Cost{USD: 1e-7, UnpricedSteps: 3}, EditStats: session.EditStats{Added: 4, Removed: 1, Approximate: true},
		Checkpoint: &session.Checkpoint{KeepUntil: 3, Seq: 4, Goal: "g", StartedAt: "s"}, LastRewindReport: &r,
		StreamRules: session.StreamRules{Turn: 2, Fired: map[string]uint64{"b": 2, "a<": 1}},
		ForkedFrom:  &session.ForkOrigin{ID: "x", Seq: 7}, Head: 9, NextSeq: 10,
		Branches:     []session.NamedBranch{{Name: "pre", Seq: 1}},
		MessageCount: 9, UserMessageCount: 4, Tokens: 1234, SystemTokens: 12,
		Source: &session.ImportSource{Format: "claude", ID: "s-1", Path: "/h/a.jsonl", Usage: &session.Usage{InputTokens: 1}},
		Extra:  []session.Field{{Key: "k<", Value: []byte(`{"a":[1,"<"]}`)}}}
	want := `{"id":"3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab","title":"a \u003cb\u003e \u0026 \"c\"\u2028\ufffd","title_source":"manual",` +
		`"system_prompt":"tab\tnl\n\u0001é","project_path":"/p","created_at":"2026-08-21T12:00:00Z","updated_at":"2026-08-21T12:00:01Z",` +
		`"usage":{"input_tokens":4611686018427387904,"output_tokens":2,"cache_read_input_tokens":5},"cost":{"usd":1e-7,"unpriced_steps":3},` +
		`"edit_stats":{"added":4,"removed":1,"approximate":true},"checkpoint":{"keep_until":3,"seq":4,"goal":"g","started_at":"s"},` +
		`"last_rewind_report":"rewound \u003cb\u003e","stream_rules":{"turn":2,"fired":{"a\u003c":1,"b":2}},"forked_from":{"id":"x","seq":7},` +
		`"head":9,"next_seq":10,"branches":[{"name":"pre","seq":1}],"message_count":9,"user_message_count":4,"tokens":1234,"system_tokens":12,` +
		`"import_source":{"format":"claude","id":"s-1","path":"/h/a.jsonl","usage":{"input_tokens":1,"output_tokens":0}},"extra":{"k\u003c":{"a":[1,"\u003c"]}}}`
	if got := string(EncodeMeta(&m)); got != want {
		t.Errorf("the record\n%s\nwant\n%s", got, want)
	}
	big := session.Meta{ID: "a", Cost: session.Cost{USD: 1e21}}
	if got := string(EncodeMeta(&big)); !strings.Contains(got, `"cost":{"usd":1e+21,`) || !strings.Contains(got, `"stream_rules":{"turn":0,"fired":null}`) {
		t.Errorf("the record %s", got)
	}
}

// A record read back is what was written, but for the strings
// encoding/json replaces (invalid UTF-8 is read as U+FFFD), and writes the
// same bytes again.
func TestMetaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 3000 {
		m := randomMeta(rng)
		if m.TitleSource == "" {
			m.TitleSource = session.TitleDefault // as DecodeMeta reads an empty one
		}
		got, err := DecodeMeta(EncodeMeta(&m))
		if err != nil {
			t.Fatalf("meta %d: %v\n%s", i, err, EncodeMeta(&m))
		}
		if got.Head != m.Head || got.NextSeq != m.NextSeq || got.Cost != m.Cost || got.Usage.InputTokens != m.Usage.InputTokens ||
			len(got.Branches) != len(m.Branches) || len(got.Extra) != len(m.Extra) || (got.Checkpoint == nil) != (m.Checkpoint == nil) {
			t.Fatalf("meta %d decodes as\n%+v\nwant\n%+v", i, got, m)
		}
		if utf8.ValidString(m.Title) && got.Title != m.Title {
			t.Fatalf("meta %d: title %q, want %q", i, got.Title, m.Title)
		}
		if !bytes.Contains(EncodeMeta(&m), []byte(`\ufffd`)) && m.Extra == nil && !reflect.DeepEqual(got, m) {
			t.Fatalf("meta %d decodes as\n%#v\nwant\n%#v", i, got, m) // nothing replaced, nothing compacted
		}
		stored := EncodeMeta(&got)
		again, err := DecodeMeta(stored)
		if err != nil || !reflect.DeepEqual(again, got) || !bytes.Equal(EncodeMeta(&again), stored) {
			t.Fatalf("meta %d stored as\n%s\nthen as\n%s, %v", i, stored, EncodeMeta(&again), err)
		}
	}
}

// A backup's metadata may have gone through another tool: other spellings
// of the record read as encoding/json reads them, the rest are refused.
func TestDecodeMetaOtherForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want func(m *session.Meta) // nil: refused
	}{
		{` {"id":"a", "head":1} `, func(m *session.Meta) { m.ID, m.Head = "a", 1 }},
		{`{"unknown":[1,{"x":null}],"head":2}`, func(m *session.Meta) { m.Head = 2 }},
		{`{"head":1,"head":2}`, func(m *session.Meta) { m.Head = 2 }},
		{`{"usage":{"input_tokens":7},"usage":{"output_tokens":1}}`, func(m *session.Meta) { m.Usage = session.Usage{InputTokens: 7, OutputTokens: 1} }},
		{`{"id":"\ud800"}`, func(m *session.Meta) { m.ID = "\ufffd" }},
		{`{"id":"a\u00e9\/\ud83d\ude00"}`, func(m *session.Meta) { m.ID = "aé/😀" }},
		{`{"stream_rules":{"fired":{"a":1,"a":2}}}`, func(m *session.Meta) { m.StreamRules.Fired = map[string]uint64{"a": 2} }},
		{`{"extra":{"a" : [1, 2]}}`, func(m *session.Meta) { m.Extra = []session.Field{{Key: "a", Value: json.RawMessage(`[1,2]`)}} }},
		{`{"branches":null,"checkpoint":null,"title":null,"extra":null}`, func(*session.Meta) {}},
		{`{}`, func(*session.Meta) {}},
		{`{"id":"a","head":1.5}`, nil}, {`{"id":"a","head":-1}`, nil}, {`{"id":"a","head":1e2}`, nil},
		{`{"id":"a","head":18446744073709551616}`, nil}, {`{"cost":{"usd":1e400}}`, nil},
		{`{"cost":{"unpriced_steps":4294967296}}`, nil}, {`{"head":"x"}`, nil}, {`{"extra":[]}`, nil}, {`{`, nil}, {`[]`, nil}, {`null`, nil}, {``, nil},
	} {
		got, err := DecodeMeta([]byte(tc.in))
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: decoded as %+v, want an error", tc.in, got)
			}
			continue
		}
		want := session.Meta{TitleSource: session.TitleDefault}
		tc.want(&want)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded as %+v, %v\nwant %+v", tc.in, got, err, want)
		}
	}
}

// Past a struct's few keys the scanner keeps a set of the rules it read:
// a repeated rule takes its last value there too.
func TestDecodeMetaManyRules(t *testing.T) {
	rules := make([]string, 40)
	for i := range rules {
		rules[i] = fmt.Sprintf(`"rule-%02d":%d`, i, i)
	}
	repeated := `{"stream_rules":{"turn":1,"fired":{` + strings.Join(append(rules, `"rule-03":99`), ",") + `}}}`
	m, err := DecodeMeta([]byte(repeated))
	if err != nil || len(m.StreamRules.Fired) != 40 || m.StreamRules.Fired["rule-03"] != 99 || m.StreamRules.Fired["rule-39"] != 39 {
		t.Errorf("the rules decode as %v, %v", m.StreamRules.Fired, err)
	}
}

// Decoding stays linear in the rules a session has fired.
func BenchmarkDecodeMetaRules(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		m := session.Meta{ID: "3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", StreamRules: session.StreamRules{Turn: 1, Fired: map[string]uint64{}}}
		for i := range n {
			m.StreamRules.Fired[fmt.Sprintf("rule-%06d", i)] = uint64(i)
		}
		stored := EncodeMeta(&m)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(stored)))
			for b.Loop() {
				if _, err := DecodeMeta(stored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Whatever the codec reads, it writes as a record it reads back the same.
func FuzzDecodeMeta(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 20 {
		m := randomMeta(rng)
		f.Add(EncodeMeta(&m))
	}
	f.Add([]byte(`{"stream_rules":{"turn":1,"fired":{"x\u00e9":2}},"extra":{"a":[1,{"b":"<"}]}}`))
	f.Add([]byte(` {"id" : "a\ud800", "head":1, "head":2, "usage":null} `))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeMeta(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("%q is not JSON, and decoded as %+v", b, got)
		}
		stored := EncodeMeta(&got)
		again, err := DecodeMeta(stored)
		if err != nil {
			t.Fatalf("%q: stored as %s, which does not decode: %v", b, stored, err)
		}
		if restored := EncodeMeta(&again); !bytes.Equal(restored, stored) {
			t.Fatalf("%q: stored as\n%s\nthen as\n%s", b, stored, restored)
		}
	})
}
