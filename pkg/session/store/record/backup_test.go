package record_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// writeBackup writes sessions as wc-export --format backup does.
func writeBackup(sessions []*record.Restored) []byte {
	var out bytes.Buffer
	w := record.NewBackupWriter(&out)
	for _, s := range sessions {
		w.Header(&s.Meta)
		names := s.Meta.BranchNames()
		for i := range s.Nodes {
			w.Write(session.AppendNodeLine(nil, s.Meta.ID, &s.Nodes[i], s.Nodes[i].Seq == s.Meta.Head, names[s.Nodes[i].Seq]))
		}
		for _, b := range s.Blobs {
			w.Blob(s.Meta.ID, b.Data)
		}
	}
	w.End()
	return out.Bytes()
}

func readBackup(data []byte) ([]*record.Restored, error) {
	r := record.NewBackupReader(bytes.NewReader(data))
	var out []*record.Restored
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// backupSeed is a backup of version 1, which has no end line.
const backupSeed = `{"id":"3f2a9c1e-0000-4000-8000-000000000001","backup":1,"meta":{"id":"3f2a9c1e-0000-4000-8000-000000000001","title":"t","title_source":"manual","system_prompt":"be terse","project_path":"/p","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:01:00Z","usage":{"input_tokens":5,"output_tokens":1},"cost":{"usd":0.5,"unpriced_steps":1},"edit_stats":{"added":0,"removed":0,"approximate":false},"checkpoint":{"keep_until":1,"seq":1,"goal":"g","started_at":"2026-01-01T00:00:30Z"},"stream_rules":{"turn":1,"fired":null},"head":3,"next_seq":5,"branches":[{"name":"old","seq":2}],"message_count":2,"user_message_count":1,"tokens":26,"system_tokens":2}}
{"id":"3f2a9c1e-0000-4000-8000-000000000001","seq":1,"parent":0,"message":{"role":"user","content":"hi"}}
{"id":"3f2a9c1e-0000-4000-8000-000000000001","seq":2,"parent":1,"branches":["old"],"message":{"role":"assistant","content":"full output saved: wc-blob:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}}
{"id":"3f2a9c1e-0000-4000-8000-000000000001","seq":3,"parent":1,"head":true,"message":{"role":"assistant","content":"full output saved: wc-blob:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}}
{"id":"3f2a9c1e-0000-4000-8000-000000000001","blob":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","data":"aGVsbG8="}
{"id":"7b1e0000-0000-4000-8000-000000000002","backup":1,"meta":{"id":"7b1e0000-0000-4000-8000-000000000002","title":"empty","title_source":"default","system_prompt":"","project_path":"/p","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","usage":{"input_tokens":0,"output_tokens":0},"cost":{"usd":0,"unpriced_steps":0},"edit_stats":{"added":0,"removed":0,"approximate":false},"stream_rules":{"turn":0,"fired":null},"head":0,"next_seq":1,"message_count":0,"user_message_count":0,"tokens":0,"system_tokens":0}}
`

func TestBackupRead(t *testing.T) {
	got, err := readBackup([]byte(backupSeed))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d sessions, want 2", len(got))
	}
	s := got[0]
	if len(s.Nodes) != 3 || len(s.Blobs) != 1 || string(s.Blobs[0].Data) != "hello" {
		t.Fatalf("read %d nodes and %d blobs", len(s.Nodes), len(s.Blobs))
	}
	// The totals are counted again; the repeated message is hinted.
	if n := s.Nodes[2]; n.Parent != 1 || n.Depth != 2 || n.Users != 1 || n.Same != 2 {
		t.Errorf("node 3 = %+v", n)
	}
	if s.Meta.MessageCount != 2 || s.Meta.Tokens != s.Nodes[2].Tokens+s.Meta.SystemTokens {
		t.Errorf("counts = %d messages, %d tokens", s.Meta.MessageCount, s.Meta.Tokens)
	}
	// Written again, it is the same but for the version and the end line.
	again := writeBackup(got)
	body, end, _ := bytes.Cut(again, []byte(`{"backup_end":`))
	if want := strings.ReplaceAll(backupSeed, `"backup":1,`, `"backup":2,`); string(body) != want {
		t.Errorf("written again:\n%s\nwant\n%s", body, want)
	}
	sum := sha256.Sum256(body)
	if want := `{"sessions":2,"sha256":"` + hex.EncodeToString(sum[:]) + "\"}}\n"; string(end) != want {
		t.Errorf("end line %s, want %s", end, want)
	}
}

// A version 2 backup cut at any line, or changed in any line, is refused:
// a reader never takes it for a whole backup of fewer sessions, nodes or
// blobs. Two whole backups one after the other read as one.
func TestBackupCutOrChanged(t *testing.T) {
	sessions, err := readBackup([]byte(backupSeed))
	if err != nil {
		t.Fatal(err)
	}
	whole := writeBackup(sessions)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	for n := 1; n < len(lines)-1; n++ { // the last is empty
		cut := bytes.Join(lines[:n], nil)
		if _, err := readBackup(cut); !isInvalid(err) {
			t.Errorf("cut after line %d of %d: %v", n, len(lines)-1, err)
		}
		changed := bytes.Join(slices.Delete(slices.Clone(lines), n-1, n), nil)
		if _, err := readBackup(changed); !isInvalid(err) {
			t.Errorf("line %d left out: %v", n, err)
		}
		edited := bytes.Clone(whole)
		at := len(bytes.Join(lines[:n-1], nil)) + bytes.Index(lines[n-1], []byte(`"t`)) + 2
		edited[at] ^= 1 // a letter of a member name, or of a value
		if _, err := readBackup(edited); !isInvalid(err) {
			t.Errorf("line %d changed: %v", n, err)
		}
	}
	twice, err := readBackup(append(bytes.Clone(whole), whole...))
	if err != nil || len(twice) != 2*len(sessions) {
		t.Errorf("two backups in a row: %d sessions, %v", len(twice), err)
	}
}

// FuzzBackup: whatever a backup reader takes, written again, reads back
// the same.
func FuzzBackup(f *testing.F) {
	f.Add([]byte(backupSeed))
	f.Add([]byte(backupSeed[:len(backupSeed)/2]))
	f.Fuzz(func(t *testing.T, data []byte) {
		sessions, err := readBackup(data)
		if err != nil {
			var inv *session.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		again, err := readBackup(writeBackup(sessions))
		if err != nil {
			t.Fatalf("written again, it does not read: %v", err)
		}
		if !reflect.DeepEqual(again, sessions) {
			t.Fatalf("written again, it reads otherwise")
		}
	})
}

// A next seq past 2^53 is refused: the session's next append would
// overflow it.
func TestBackupNextSeqBound(t *testing.T) {
	huge := strings.Replace(backupSeed, `"next_seq":5`, `"next_seq":18446744073709551615`, 1)
	if _, err := readBackup([]byte(huge)); !isInvalid(err) || !strings.Contains(err.Error(), "next_seq 18446744073709551615 is past 2^53") {
		t.Errorf("next_seq near 2^64: %v", err)
	}
}
