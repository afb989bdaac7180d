package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
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

func randomMeta(rng *rand.Rand) Meta {
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
	m := Meta{
		ID: s(), Title: s(), TitleSource: TitleSource(s()), SystemPrompt: s(), ProjectPath: s(),
		CreatedAt: s(), UpdatedAt: s(),
		Usage:     Usage{InputTokens: u(), OutputTokens: u()},
		Cost:      Cost{USD: metaFloats[rng.IntN(len(metaFloats))], UnpricedSteps: uint32(u())},
		EditStats: EditStats{Added: u(), Removed: u(), Approximate: rng.IntN(2) == 0},
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
		m.Checkpoint = &Checkpoint{KeepUntil: u(), Seq: u(), Goal: s(), StartedAt: s()}
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
		m.ForkedFrom = &ForkOrigin{ID: s(), Seq: u()}
	}
	for range rng.IntN(4) {
		m.Branches = append(m.Branches, NamedBranch{Name: s(), Seq: u()})
	}
	if rng.IntN(3) == 0 {
		m.Source = &ImportSource{Format: s(), ID: s(), Path: s()}
		if rng.IntN(2) == 0 {
			m.Source.Usage = &Usage{InputTokens: u(), OutputTokens: u()}
		}
	}
	if rng.IntN(3) == 0 {
		values := []string{`1`, `"x <&> y"`, `[1, 2, {"a": null}]`, `{"nested": {"k": "\u00e9"}}`, `true`}
		for i := range 1 + rng.IntN(3) {
			m.Extra = append(m.Extra, Field{Key: []string{"turn_context", "instruction_dirs", "k<"}[i], Value: json.RawMessage(values[rng.IntN(len(values))])})
		}
	}
	return m
}

// marshalMeta and unmarshalMeta are EncodeMeta and DecodeMeta as they were
// before they were written by hand: through encoding/json.
func marshalMeta(t testing.TB, m *Meta) []byte {
	d := metaDisk{Meta: *m}
	if len(m.Extra) > 0 {
		var obj []byte
		obj = append(obj, '{')
		for i, f := range m.Extra {
			obj = appendKey(obj, i == 0, f.Key)
			obj = append(obj, f.Value...)
		}
		d.Extra = append(obj, '}')
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unmarshalMeta(b []byte) (Meta, error) {
	var d metaDisk
	if err := json.Unmarshal(b, &d); err != nil {
		return Meta{}, err
	}
	m := d.Meta
	if len(d.Extra) > 0 {
		m.Extra = objectFields(d.Extra)
	}
	if m.TitleSource == "" {
		m.TitleSource = TitleDefault
	}
	return m, nil
}

func TestMetaJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 3000 {
		m := randomMeta(rng)
		got, want := EncodeMeta(&m), marshalMeta(t, &m)
		if !bytes.Equal(got, want) {
			t.Fatalf("meta %d encodes as\n%s\nencoding/json writes\n%s", i, got, want)
		}
		dm, extra, ok := decodeStoredMeta(got)
		if !ok {
			t.Fatalf("meta %d: the scanner does not take what EncodeMeta wrote:\n%s", i, got)
		}
		if len(extra) > 0 {
			dm.Extra = objectFields(extra)
		}
		if dm.TitleSource == "" {
			dm.TitleSource = TitleDefault
		}
		wm, err := unmarshalMeta(got)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(dm, wm) {
			t.Fatalf("meta %d decodes as\n%#v\nencoding/json reads\n%#v", i, dm, wm)
		}

		info := m.Info()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&info); err != nil {
			t.Fatal(err)
		}
		if got := string(AppendInfoJSON(nil, &info)) + "\n"; got != buf.String() {
			t.Fatalf("info %d prints as\n%s\nencoding/json writes\n%s", i, got, buf.String())
		}
	}
}

// The scanner gives way on what it does not read as encoding/json would:
// these must take the slow path and decode as before.
func TestDecodeMetaOtherForms(t *testing.T) {
	m := randomMeta(rand.New(rand.NewPCG(13, 14)))
	stored := string(EncodeMeta(&m))
	for _, in := range []string{
		` ` + stored,
		strings.Replace(stored, `{"id"`, `{"ID"`, 1),
		strings.Replace(stored, `"head":`, `"unknown":1,"head":`, 1),
		strings.Replace(stored, `"head":`, `"head":1,"head":`, 1),
		strings.Replace(stored, `"usage":{`, `"usage":{"input_tokens":7},"usage":{`, 1),
		`{"id":"a","head":1.5}`, `{"id":"a","head":-1}`, `{"id":"a","head":1e2}`, `{"id":"a","head":18446744073709551616}`,
		`{"id":"\ud800"}`, `{"id":"a\u00e9\/"}`, `{"cost":{"usd":1e400}}`, `{"cost":{"unpriced_steps":4294967296}}`,
		`{"stream_rules":{"fired":{"a":1,"a":2}}}`, `{"extra":null}`, `{"extra":{"a" :1}}`, `{"branches":null}`,
		`{"checkpoint":null}`, `{"title":null}`, `{}`, `{`, `[]`, `null`, ``,
	} {
		got, gerr := DecodeMeta([]byte(in))
		want, werr := unmarshalMeta([]byte(in))
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%.80q: DecodeMeta gives %v, %v; encoding/json %v, %v", in, got, gerr, want, werr)
		}
	}
}

// Past a struct's few keys the scanner keeps a set: a repeated rule is
// still refused, to encoding/json, which keeps the last.
func TestDecodeMetaManyRules(t *testing.T) {
	rules := make([]string, 40)
	for i := range rules {
		rules[i] = fmt.Sprintf(`"rule-%02d":%d`, i, i)
	}
	distinct := `{"stream_rules":{"turn":1,"fired":{` + strings.Join(rules, ",") + `}}}`
	repeated := `{"stream_rules":{"turn":1,"fired":{` + strings.Join(append(rules, `"rule-03":99`), ",") + `}}}`
	if _, _, ok := decodeStoredMeta([]byte(distinct)); !ok {
		t.Error("the scanner refuses 40 distinct rules")
	}
	if _, _, ok := decodeStoredMeta([]byte(repeated)); ok {
		t.Error("the scanner takes a rule repeated after the 16th")
	}
	m, err := DecodeMeta([]byte(repeated))
	if err != nil || len(m.StreamRules.Fired) != 40 || m.StreamRules.Fired["rule-03"] != 99 {
		t.Errorf("a repeated rule decodes as %v, %v", m.StreamRules.Fired, err)
	}
}

// Decoding stays linear in the rules a session has fired.
func BenchmarkDecodeMetaRules(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		m := Meta{ID: "3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", StreamRules: StreamRules{Turn: 1, Fired: map[string]uint64{}}}
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

func FuzzDecodeMeta(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 20 {
		m := randomMeta(rng)
		f.Add(EncodeMeta(&m))
	}
	f.Add([]byte(`{"stream_rules":{"turn":1,"fired":{"x\u00e9":2}},"extra":{"a":[1,{"b":"<"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := DecodeMeta(b)
		want, werr := unmarshalMeta(b)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: DecodeMeta gives %#v, %v; encoding/json %#v, %v", b, got, gerr, want, werr)
		}
		if gerr != nil {
			return
		}
		// Extra's raw values are HTML-escaped on the way: compare the stored
		// forms, which must be stable after one write.
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
