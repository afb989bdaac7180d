package record_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// checkNodeMessage is the property of FuzzNodeMessage: every message
// session.DecodeMessage reads survives a node record, and whatever a node
// record's message decodes to writes a record that decodes to the same
// JSON.
func checkNodeMessage(t *testing.T, data []byte) {
	asStored := append(append([]byte(`{"parent":0,"n":1,"tok":0,"users":0,"msg":`), data...), '}')
	// A record holds valid UTF-8 (AppendJSON writes nothing else); the
	// decoder passes other bytes through, as they are, in keys.
	if n, err := record.DecodeNode(1, asStored); err == nil && utf8.Valid(data) {
		again, err := record.DecodeNode(1, record.EncodeNode(&n))
		if err != nil || again.Header() != n.Header() || !again.Msg.SameJSON(&n.Msg) {
			t.Fatalf("%q decodes as\n%#v\nwritten and read again as\n%#v, %v", data, n.Msg, again.Msg, err)
		}
	} else if err != nil && !isInvalid(err) {
		t.Fatalf("%q: %v", data, err)
	}
	if !gjson.ValidBytes(data) || !utf8.Valid(data) {
		return // DecodeMessage's contract: the caller validates the input
	}
	m, err := session.DecodeMessage(data)
	if err != nil {
		return
	}
	n := session.Child(nil, 7, m)
	stored := record.EncodeNode(&n)
	got, err := record.DecodeNode(7, stored)
	if err != nil {
		t.Fatalf("the record of %q does not decode: %v\n%s", data, err, stored)
	}
	if got.Header() != n.Header() || !got.Msg.SameJSON(&m) || !bytes.Equal(record.EncodeNode(&got), stored) {
		t.Fatalf("%q does not survive its record %s:\n%#v\n%#v", data, stored, got.Msg, m)
	}
}

func isInvalid(err error) bool {
	var ie *session.InvalidError
	return errors.As(err, &ie)
}

// Messages in and out of the form session.Message.AppendJSON writes, and\n// the escapes JSON allows.
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
	`{"role":"assistant","content":[{"type":"tooluse"}]}`,
}

func TestNodeMessageSeeds(t *testing.T) {
	for _, s := range storedSeeds {
		checkNodeMessage(t, []byte(s))
	}
	for _, s := range benchNodes {
		checkNodeMessage(t, []byte(s))
	}
	long := `{"role":"tool","content":"` + strings.Repeat(`line\twith \"quotes\" and \\ slashes\n`, 500) + `"}`
	checkNodeMessage(t, []byte(long))
}

func FuzzNodeMessage(f *testing.F) {
	for _, s := range storedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkNodeMessage)
}
