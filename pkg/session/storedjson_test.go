package session_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
)

// checkStored is the property of FuzzDecodeStored: whatever the fast
// decoder of stored nodes accepts, DecodeMessage reads the same way, and
// it accepts everything AppendJSON writes.
func checkStored(t *testing.T, data []byte) {
	if fast, ok := session.DecodeStored(data); ok {
		slow, err := session.DecodeMessage(data)
		if err != nil {
			t.Fatalf("fast decoder took what DecodeMessage refuses (%v):\n%q", err, data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoders differ on %q:\nfast %#v\nslow %#v", data, fast, slow)
		}
	}
	if !gjson.ValidBytes(data) {
		return // DecodeMessage's contract: the caller validates the JSON
	}
	m, err := session.DecodeMessage(data)
	if err != nil {
		return
	}
	stored := m.AppendJSON(nil)
	fast, ok := session.DecodeStored(stored)
	if !ok {
		t.Fatalf("fast decoder refuses what AppendJSON wrote:\n%q", stored)
	}
	if slow, _ := session.DecodeMessage(stored); !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decoders differ on %q:\nfast %#v\nslow %#v", stored, fast, slow)
	}
	n := session.Child(nil, 7, m)
	got, err := session.DecodeNode(7, session.EncodeNode(&n))
	if err != nil || got.Header() != n.Header() || !reflect.DeepEqual(got.Msg, fast) {
		t.Fatalf("node does not survive a round trip: %v\n%#v\n%#v", err, got, n)
	}
}

// Forms the fast decoder must hand over, and the escapes it must read.
var storedSeeds = []string{
	`{"role":"user","content":"a\"b\\c\/d\b\f\n\r\t\u0001\u007f\u00e9\u2028 é"}`,
	`{"role":"user","content":"\ud83d\ude00 lone \ud83d and \ude00"}`,
	`{"role":"user","content":"raw ` + "\x01" + ` control"}`,
	`{"role":"user","content":"x","role":"tool"}`,
	`{"role":"user","content":"x","extra":1,"extra":2}`,
	`{"role":"user","content":"x","kind":"other"}`,
	`{"role":"user","content":"x","kind":null}`,
	`{"role":"user","content":"x","kind":"not\u0065"}`,
	`{"role":"user","content":"x","name":null,"is_error":null}`,
	`{"role":"user","content":"x","created_at":"yesterday"}`,
	`{"content":"x"}`,
	`{}`,
	`{"role":"user","content":null}`,
	`{"role":"user","content":[]}`,
	`{"role":"user"}`,
	`{"role":"user","content":"x"} `,
	`{"role":"user", "content":"x"}`,
	`{"role":"user","content":"x","n":-0.5e+3,"o":{"a":[1,true,false,null,"\ud83d"]},"e":[],"f":{}}`,
	`{"role":"user","content":"x","n":01}`,
	`{"role":"user","content":"x","n":1.}`,
	`{"role":"user","content":"x","s":"\x"}`,
	`{"role":"assistant","content":[{"text":"a","type":"text"}]}`,
	`{"role":"assistant","content":[{"type":"text","text":"a","type":"image"}]}`,
	`{"role":"assistant","content":[{"type":"text","text":null}]}`,
	`{"role":"assistant","content":[{"type":"text","text":1}]}`,
	`{"role":"assistant","content":[{"type":"thinking","text":"a","signature":null}]}`,
	`{"role":"assistant","content":[{"type":"thinking","text":"a","thinking":"b"}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"n","input":null}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"n","input":{"a":"\u00e9"},"input":{}}]}`,
	`{"role":"assistant","content":[{"type":"image","source":null,"x":[]}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":null,"is_error":null}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":[{"type":"text","text":"a"}],"is_error":false}]}`,
	`{"role":"user","content":[{"type":"toolresult","content":"a","is_error":"yes"}]}`,
	`{"role":"user","content":[{"type":"mystery","z":{"deep":[1,2]},"a":"b"}]}`,
	`{"role":"user","content":[{"type":"mystery", "a":"b"}]}`,
	`{"role":"user","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}`,
	`{"role":"user","content":[{"type":7}]}`,
	`{"role":"user","content":["bare"]}`,
	`{"role":"user","content":"x","tool_calls":[]}`,
	`{"role":"user","content":"x","k\u0065y":1}`,
	`{"role":"user","content":"unterminated`,
	`{"role":"user","content":"x",`,
	`[{"role":"user","content":"x"}]`,
	// Found by fuzzing: forms AppendJSON writes from odd input.
	`{"role":"user","\b":""}`,
	`{"role":"user","kind":"\b0000"}`,
	"{\"role\":\"user\",\"ex\x89ra\":0,\"ex\x80ra\":0}",
	`{"role":"assistant","content":[{"":"","type":""}]}`,
}

func TestDecodeStoredSeeds(t *testing.T) {
	for _, s := range append(append([]string{}, messageSeeds...), storedSeeds...) {
		checkStored(t, []byte(s))
	}
	for _, s := range fixtureMessages(t) {
		checkStored(t, s)
	}
	// Every stored form must be read fast, not handed back.
	for name, raw := range benchMessages {
		m, err := session.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := session.DecodeStored(m.AppendJSON(nil)); !ok {
			t.Errorf("%s: the fast decoder refuses a stored message", name)
		}
	}
	long := `{"role":"tool","content":"` + strings.Repeat(`line\twith \"quotes\" and \\ slashes\n`, 500) + `"}`
	checkStored(t, []byte(long))
}

func FuzzDecodeStored(f *testing.F) {
	for _, s := range append(append([]string{}, messageSeeds...), storedSeeds...) {
		f.Add([]byte(s))
	}
	for _, s := range fixtureMessages(f) {
		f.Add(s)
	}
	f.Fuzz(checkStored)
}
