package textindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func words(text string) []string {
	var out []string
	Words(text, func(w string, _, _ int) { out = append(out, w) })
	return out
}

func TestWords(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"parse_config(x)->y", []string{"parse", "config", "x", "y"}},
		{"café naïve 中文", []string{"café", "naïve", "中文"}},
		{"ÉCOLE e\u0301t\u00e9", []string{"école", "e\u0301t\u00e9"}},
		{"--", nil},
		{"a\xffb", []string{"a", "b"}},
	} {
		if got := words(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestGrepPlan(t *testing.T) {
	for _, c := range []struct {
		needle string
		want   []Frag
	}{
		{"login test", []Frag{{"login", Suffix}, {"test", Prefix}}},
		{"ogi", []Frag{{"ogi", Inside}}},
		{" x.y ", []Frag{{"x", Exact}, {"y", Exact}}},
		{"a b c", []Frag{{"a", Suffix}, {"b", Exact}, {"c", Prefix}}},
		{"(Login", []Frag{{"login", Prefix}}},
	} {
		got, ok := GrepPlan(c.needle)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("GrepPlan(%q) = %v %v, want %v", c.needle, got, ok, c.want)
		}
	}
	for _, n := range []string{"->", "", " ", "\xff"} {
		if _, ok := GrepPlan(n); ok {
			t.Errorf("GrepPlan(%q) narrows", n)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(`login "flaky test" pars* foo-bar`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Clause{{{"login", Exact}}, {{"flaky", Exact}, {"test", Exact}}, {{"pars", Prefix}}, {{"foo", Exact}, {"bar", Exact}}}
	if len(q.Clauses) != len(want) {
		t.Fatalf("clauses %v, want %v", q.Clauses, want)
	}
	for i := range want {
		if !slices.Equal(q.Clauses[i], want[i]) {
			t.Errorf("clause %d = %v, want %v", i, q.Clauses[i], want[i])
		}
	}
	for _, bad := range []string{``, `  `, `"open`, `*`, `a*b`, `""`, `"--"`, `- --`} {
		if _, err := ParseQuery(bad); err == nil {
			t.Errorf("ParseQuery(%q) parses", bad)
		}
	}
}

var vocab = strings.Fields("login test testing logins handleLogin the a of flaky TestLogin rollback Café café x y")

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(30) {
		b.WriteString(vocab[r.IntN(len(vocab))])
		b.WriteString([]string{" ", " ", "  ", ".", "\n", "_", "-"}[r.IntN(7)])
	}
	return b.String()
}

// build indexes texts as documents 0..n-1 of one session (seq = i+1).
func build(texts [][]string) Source {
	b := NewBuilder()
	for i, t := range texts {
		b.Add(ID{1}, uint64(i+1), t)
	}
	p := b.Encode()
	seg, err := Decode(p.Head, p.Dict)
	if err != nil {
		panic(err)
	}
	return Source{Seg: seg, Postings: func(t *Term) ([]byte, error) { return p.Postings[t.Off : t.Off+t.Len], nil }}
}

// TestMatchSuperset checks the promise --grep rests on: every document
// with a text holding the needle (ignoring case) is a candidate, and the
// candidates of a needle of words at single spaces inside a text are
// exactly those.
func TestMatchSuperset(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var texts [][]string
	for range 300 {
		var doc []string
		for range 1 + r.IntN(3) {
			doc = append(doc, randomText(r))
		}
		texts = append(texts, doc)
	}
	src := build(texts)
	for trial := range 400 {
		// A needle cut from a random text, at random byte offsets.
		doc := texts[r.IntN(len(texts))]
		text := doc[r.IntN(len(doc))]
		i := r.IntN(len(text))
		j := min(len(text), i+1+r.IntN(20))
		needle := strings.ToLower(text[i:j])
		if trial%3 == 0 {
			needle = "login test"
		}
		frags, ok := GrepPlan(needle)
		if !ok {
			continue
		}
		got, err := Match(src, frags)
		if err != nil {
			t.Fatal(err)
		}
		for d, doc := range texts {
			holds := false
			for _, text := range doc {
				holds = holds || strings.Contains(strings.ToLower(text), needle)
			}
			if holds && got[uint32(d)] == 0 {
				t.Fatalf("needle %q: document %d holds it, not a candidate (frags %v)", needle, d, frags)
			}
		}
	}
}

func TestSearchRanksAndSnippet(t *testing.T) {
	texts := [][]string{
		{"nothing here"},
		{"a login test, once", "and then some other words to make it longer than the next one"},
		{"login test login test: login test"},
		{"test login"},
		{"the logging of tests"},
	}
	src := build(texts)
	q, _ := ParseQuery(`"login test"`)
	hits, err := Search([]Source{src}, q)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(hits, func(a, b Hit) int { return -cmpFloat(a.Score, b.Score) })
	var docs []uint32
	for _, h := range hits {
		docs = append(docs, h.Doc)
	}
	if !slices.Equal(docs, []uint32{2, 1}) {
		t.Errorf("phrase hits %v, want [2 1] (most matches first)", docs)
	}
	q, _ = ParseQuery(`log* test*`)
	hits, _ = Search([]Source{src}, q)
	if len(hits) != 4 {
		t.Errorf("prefix hits %d, want 4 (all but the first)", len(hits))
	}
	snip, ok := Snippet(texts[1], mustQuery(t, `"login test"`), 12)
	if !ok || !strings.Contains(snip, "login test") || !strings.HasSuffix(snip, "…") {
		t.Errorf("snippet %q %v", snip, ok)
	}
	if _, ok := Snippet(texts[3], mustQuery(t, `"login test"`), 40); ok {
		t.Error(`"test login" matches the phrase "login test"`)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func mustQuery(t *testing.T, s string) *Query {
	q, err := ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestMerge checks that a merged segment answers as its inputs did,
// without the documents it drops.
func TestMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var all [][]string
	var srcs []Source
	for range 3 {
		var texts [][]string
		for range 50 {
			texts = append(texts, []string{randomText(r)})
		}
		srcs = append(srcs, build(texts))
		all = append(all, texts...)
	}
	p, err := Merge(srcs, func(src int, doc uint32) bool { return !(src == 1 && doc%2 == 0) })
	if err != nil {
		t.Fatal(err)
	}
	seg, err := Decode(p.Head, p.Dict)
	if err != nil {
		t.Fatal(err)
	}
	merged := Source{Seg: seg, Postings: func(t *Term) ([]byte, error) { return p.Postings[t.Off : t.Off+t.Len], nil }}
	if len(seg.DocSeq) != 125 {
		t.Fatalf("merged %d docs, want 125", len(seg.DocSeq))
	}
	for _, needle := range []string{"login", "flaky test", "café", "handlelogin the"} {
		frags, _ := GrepPlan(needle)
		want := 0
		for s := range srcs {
			m, _ := Match(srcs[s], frags)
			for d := range m {
				if !(s == 1 && d%2 == 0) {
					want++
				}
			}
		}
		got, _ := Match(merged, frags)
		if len(got) != want {
			t.Errorf("%q: %d docs in the merged segment, %d in its inputs", needle, len(got), want)
		}
	}
	_ = all
}

func TestManifestRoundTrip(t *testing.T) {
	m := &Manifest{Segments: []SegmentInfo{{ID: 3, Docs: 10, Chunks: [3]uint32{1, 1, 2}, Bytes: [3]uint64{5, 6, 300000}}}}
	got, err := DecodeManifest(EncodeManifest(m))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(m) {
		t.Errorf("round trip %v %v, want %v", got, err, m)
	}
	if _, err := DecodeManifest(EncodeManifest(m)[:5]); err == nil {
		t.Error("a cut manifest decodes")
	}
}

func TestTiers(t *testing.T) {
	mb := uint64(1 << 20)
	if got := Tiers([]uint64{mb, mb, mb, 40 * mb, mb}, 4, 64*mb); !slices.Equal(got, []int{0, 1, 2, 4}) {
		t.Errorf("Tiers = %v", got)
	}
	if got := Tiers([]uint64{mb, mb, 40 * mb}, 4, 64*mb); got != nil {
		t.Errorf("Tiers of too few = %v", got)
	}
}
