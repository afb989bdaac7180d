package session_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
)

// checkStoredMarkdown is the property of FuzzStoredMarkdown: markdown
// written straight from stored JSON is Message's markdown of what
// DecodeNode reads, and a node goes through StoredNode the same either way.
func checkStoredMarkdown(t *testing.T, data []byte) {
	var fast bytes.Buffer
	ok, err := session.NewMarkdownWriter(&fast).StoredMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		m, took := session.DecodeStored(data)
		if !took {
			t.Fatalf("rendered what the stored decoder refuses:\n%q", data)
		}
		var slow bytes.Buffer
		_ = session.NewMarkdownWriter(&slow).Message(&m)
		if fast.String() != slow.String() {
			t.Fatalf("markdown differs for %q:\nfast %q\nslow %q", data, fast.String(), slow.String())
		}
	} else if fast.Len() != 0 {
		t.Fatalf("refused %q but wrote %q", data, fast.String())
	}
	if !gjson.ValidBytes(data) {
		return
	}
	m, err := session.DecodeMessage(data)
	if err != nil {
		return
	}
	n := session.Child(nil, 3, m)
	var viaNode, viaMessage bytes.Buffer
	if err := session.NewMarkdownWriter(&viaNode).StoredNode(3, session.EncodeNode(&n)); err != nil {
		t.Fatalf("StoredNode: %v", err)
	}
	back, _ := session.DecodeNode(3, session.EncodeNode(&n))
	_ = session.NewMarkdownWriter(&viaMessage).Message(&back.Msg)
	if viaNode.String() != viaMessage.String() {
		t.Fatalf("StoredNode differs for %q:\n got %q\nwant %q", data, viaNode.String(), viaMessage.String())
	}
}

// Forms the fast writer takes, and those it leaves to Message.
var storedMarkdownSeeds = []string{
	"{\"role\":\"user\",\"content\":\"a <b> `<c>`\\n```\\n<d>\\n```\\n\\n    <e>\"}",
	"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Vec<String> \\\\<x>\"}]}",
	"{\"role\":\"tool\",\"content\":\"a ```` b\\u001b[31m red \\u007f \u00c2\u0085 \\b\"}",
	`{"role":"tool","content":"fails","is_error":true}`,
	`{"role":"tool","content":"fine","is_error":false}`,
	`{"role":"user","content":"note","kind":"note"}`,
	`{"role":"user","content":"x","kind":"other"}`,
	`{"role":"assistant","content":"unclosed\n` + "```go\\nfunc" + `"}`,
	`{"role":"assistant","content":"` + "  ~~~\\n~~~~\\n```\\n" + `"}`,
	`{"role":"assistant","content":[]}`,
	`{"role":"assistant","content":[{"type":"text","text":null},{"type":"text"},{"type":"text","text":"a","x":[1]}]}`,
	`{"role":"tool","content":[{"type":"text","text":"out ` + "`````" + `"},{"type":"thinking","text":"t"}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"n","input":{"a":[1,{"b":"c"}],"d":"\u00e9\n"}}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"n"}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t","input":{}}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","name":null,"input":null}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","input":{},"name":"late"}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"x` + "```" + `","is_error":true}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"` + strings.Repeat("`", 7) + `","is_error":null}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":[{"type":"text","text":"a"}],"is_error":false}]}`,
	`{"role":"user","content":[{"type":"image","source":null},{"type":"redacted_thinking","data":"d"},{"type":"mystery"}]}`,
	`{"role":"assistant","content":[{"type":"thinking","text":"t","signature":"s","x":1,"x":2}]}`,
	`{"role":"assistant","content":[{"type":"text","text":"a","type":"image"}]}`,
	`{"role":"assistant","content":"x","tool_call_id":"c","name":"n","created_at":"2026-08-21T12:00:00Z","is_error":true,"e":{}}`,
	`{"role":"assistant","content":"x","created_at":"later"}`,
	`{"role":"assistant","content":"x","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`,
	`{"content":"x","role":"user"}`,
}

func TestStoredMarkdownSeeds(t *testing.T) {
	all := append(append(append([]string{}, messageSeeds...), storedSeeds...), storedMarkdownSeeds...)
	for _, s := range all {
		checkStoredMarkdown(t, []byte(s))
	}
	for _, s := range fixtureMessages(t) {
		checkStoredMarkdown(t, s)
	}
	// The common forms are written fast, not handed back.
	for name, raw := range benchMessages {
		m, err := session.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := session.NewMarkdownWriter(&bytes.Buffer{}).StoredMessage(m.AppendJSON(nil)); !ok {
			t.Errorf("%s: not written fast", name)
		}
	}
}

func FuzzStoredMarkdown(f *testing.F) {
	for _, s := range append(append(append([]string{}, messageSeeds...), storedSeeds...), storedMarkdownSeeds...) {
		f.Add([]byte(s))
	}
	for _, s := range fixtureMessages(f) {
		f.Add(s)
	}
	f.Fuzz(checkStoredMarkdown)
}
