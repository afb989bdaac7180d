package record_test

import (
	"reflect"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// summaryMeta has every member the summary holds set.
func summaryMeta() session.Meta {
	five := uint64(5)
	return session.Meta{ID: "01010101-0101-4101-8101-010101010101", Title: "t", ProjectPath: "/p", CreatedAt: "c", UpdatedAt: "u",
		Usage: session.Usage{InputTokens: 1 << 62, OutputTokens: 2, CacheReadInputTokens: &five},
		Cost:  session.Cost{USD: 0.1 + 0.2, UnpricedSteps: 3}, EditStats: session.EditStats{Added: 4, Approximate: true},
		Head: 9, Branches: []session.NamedBranch{{Name: "a", Seq: 1}}, ForkedFrom: &session.ForkOrigin{ID: "02020202-0202-4202-8202-020202020202", Seq: 7},
		MessageCount: 9, UserMessageCount: 4, Tokens: 1234,
		Source: &session.ImportSource{Format: "claude", ID: "s-1", Path: "/h/a.jsonl"}}
}

// Summaries decode to what the metadata says, and damage is reported.
func TestSummaryRoundTrip(t *testing.T) {
	m := summaryMeta()
	v := record.EncodeSummary(&m)
	want := m.Info()
	want.TitleSource = session.TitleDefault
	if want.SourceID != "s-1" || want.SourcePath != "/h/a.jsonl" || want.SourceFormat != "claude" {
		t.Fatalf("the import source: %+v", want)
	}
	if got, ok := record.DecodeSummary(m.ID, v); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, %v\nwant %+v", got, ok, want)
	}
	// Guards the layout: wc-ls prints session.Info from the summary alone.
	if n := reflect.TypeFor[session.Info]().NumField(); n != 18 {
		t.Errorf("session.Info has %d members; the summary holds 18: extend it (summaryVersion, schema)", n)
	}
	for _, bad := range [][]byte{nil, {2}, v[:len(v)-1], append(v[:len(v):len(v)], 0)} {
		if _, ok := record.DecodeSummary(m.ID, bad); ok {
			t.Errorf("decoding %x: no error", bad)
		}
		if _, ok := record.AppendSummaryJSON(nil, m.ID, bad); ok {
			t.Errorf("the line of %x: no error", bad)
		}
	}
	for n, want := range []string{m.ProjectPath, m.Title, "default", m.CreatedAt, m.UpdatedAt, "claude", "s-1", "/h/a.jsonl"} {
		if got, ok := record.SummaryField(v, n); !ok || string(got) != want {
			t.Errorf("field %d: %q, %v, want %q", n, got, ok, want)
		}
	}
}
