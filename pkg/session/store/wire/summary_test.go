package wire

import (
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// The line of a summary is part of the protocol: a resident process of
// another build that speaks it renders wc-ls's lines.
func TestSummaryLine(t *testing.T) {
	five := uint64(5)
	m := session.Meta{ID: "01010101-0101-4101-8101-010101010101", Title: "t", ProjectPath: "/p", CreatedAt: "c", UpdatedAt: "u",
		Usage: session.Usage{InputTokens: 1 << 62, OutputTokens: 2, CacheReadInputTokens: &five},
		Cost:  session.Cost{USD: 0.1 + 0.2, UnpricedSteps: 3}, EditStats: session.EditStats{Added: 4, Approximate: true},
		Head: 9, Branches: []session.NamedBranch{{Name: "a", Seq: 1}}, ForkedFrom: &session.ForkOrigin{ID: "02020202-0202-4202-8202-020202020202", Seq: 7},
		MessageCount: 9, UserMessageCount: 4, Tokens: 1234,
		Source: &session.ImportSource{Format: "claude", ID: "s-1", Path: "/h/a.jsonl"}}
	id, _ := store.ParseID(m.ID)
	v := record.EncodeSummary(&m)
	line, err := store.AppendSummaryJSON(nil, id, v)
	wantLine := `{"id":"01010101-0101-4101-8101-010101010101","title":"t","title_source":"default","project_path":"/p",` +
		`"created_at":"c","updated_at":"u","message_count":9,"user_message_count":4,"tokens":1234,` +
		`"usage":{"input_tokens":4611686018427387904,"output_tokens":2,"cache_read_input_tokens":5},` +
		`"cost":{"usd":0.3,"unpriced_steps":3},"edit_stats":{"added":4,"removed":0,"approximate":true},` +
		`"head":9,"branches":1,"forked_from":{"id":"02020202-0202-4202-8202-020202020202","seq":7},` +
		`"source_format":"claude","source_id":"s-1","source_path":"/h/a.jsonl"}`
	if ProtocolVersion != 11 || err != nil || string(line) != wantLine {
		t.Errorf("protocol %d, the line of a summary:\n%s, %v\nwant (protocol 11)\n%s\n"+
			"a change to the line needs a new ProtocolVersion, and this test its line", ProtocolVersion, line, err, wantLine)
	}
	for _, bad := range [][]byte{nil, v[:len(v)-1]} {
		if _, err := store.DecodeSummary(id, bad); err == nil || !strings.Contains(err.Error(), "listing entry of session 01010101") {
			t.Errorf("decoding %x: %v", bad, err)
		}
		if _, err := store.AppendSummaryJSON(nil, id, bad); err == nil || !strings.Contains(err.Error(), "listing entry of session 01010101") {
			t.Errorf("the line of %x: %v", bad, err)
		}
	}
}
