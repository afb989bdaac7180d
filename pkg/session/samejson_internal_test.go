package session

import (
	"bytes"
	"reflect"
	"testing"
)

// Every field of Message, Content and Block must take part in sameFields:
// one that did not would let two messages of different JSON pass as the
// same, and a compaction keep the wrong one.
func TestSameFieldsCoversMessage(t *testing.T) {
	var set func(v reflect.Value, path string, check func(string))
	set = func(v reflect.Value, path string, check func(string)) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			old := reflect.New(f.Type()).Elem()
			old.Set(f)
			switch f.Kind() {
			case reflect.Struct:
				set(f, name+".", check)
				continue
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			case reflect.Slice:
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			default:
				t.Fatalf("%s: no way to change a %s", name, f.Kind())
			}
			check(name)
			f.Set(old)
		}
	}
	var m Message
	set(reflect.ValueOf(&m).Elem(), "Message.", func(name string) {
		if m.sameFields(&Message{}) || (&Message{}).sameFields(&m) {
			t.Errorf("sameFields ignores %s", name)
		}
	})
	var b Block
	set(reflect.ValueOf(&b).Elem(), "Block.", func(name string) {
		if b.sameFields(&Block{}) || (&Block{}).sameFields(&b) {
			t.Errorf("sameFields ignores %s", name)
		}
	})
	yes, no := true, false
	if (&Block{IsError: &yes}).sameFields(&Block{IsError: &no}) {
		t.Error("sameFields ignores the value of IsError")
	}
}

// SameJSON agrees with comparing the encodings, for equal and unequal
// pairs alike.
func TestSameJSON(t *testing.T) {
	raws := []string{
		`{"role":"user","content":"hello"}`,
		`{"role":"user","content":"hello","created_at":"2026-08-21T12:00:00Z"}`,
		`{"role":"user","content":[{"type":"text","text":"hello"}]}`,
		`{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"read","input":{}}]}`,
		`{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"read","input":{"path":"a"}}]}`,
		`{"role":"tool","content":[{"type":"toolresult","tool_use_id":"t1","content":"ok","is_error":null}],"name":"read"}`,
		`{"role":"tool","content":[{"type":"toolresult","tool_use_id":"t1","content":"ok","is_error":false}],"name":"read"}`,
		`{"role":"assistant","content":[{"type":"server_tool_use","id":"x"}],"model":"m"}`,
		`{"role":"assistant","content":"hi","model":"m"}`,
	}
	var msgs []Message
	for _, r := range raws {
		m, err := DecodeMessage([]byte(r))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	// A tooluse with no input encodes as one with {}: equal JSON, unequal fields.
	msgs = append(msgs, Message{Role: RoleAssistant, Content: BlockContent(Block{Type: BlockToolUse, ID: "t1", Name: "read"})})
	for i := range msgs {
		for j := range msgs {
			want := bytes.Equal(msgs[i].AppendJSON(nil), msgs[j].AppendJSON(nil))
			if got := msgs[i].SameJSON(&msgs[j]); got != want {
				t.Errorf("SameJSON(%s, %s) = %v", msgs[i].AppendJSON(nil), msgs[j].AppendJSON(nil), got)
			}
		}
	}
}
