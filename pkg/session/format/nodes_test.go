package format

import (
	"fmt"
	"strings"
	"testing"
)

var userWords = strings.NewReplacer("x", "user:x", "y", "user:y", "z", "user:z")

// Which node lines come back as a tree, and which as a path.
func TestImportNodeLines(t *testing.T) {
	line := func(id string, seq, parent int, text string) string {
		return fmt.Sprintf(`{"id":%q,"seq":%d,"parent":%d,"message":{"role":"user","content":%q}}`, id, seq, parent, text)
	}
	const a, b = "5a1b0000-0000-4000-8000-000000000000", "6c2d0000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // per session: its path, then " | " and each branch
	}{
		{"path", []string{line(a, 1, 0, "x"), line(a, 2, 1, "y")}, []string{"x y"}},
		{"tree", []string{line(a, 1, 0, "x"), line(a, 2, 1, "y"), line(a, 3, 1, "z")}, []string{"x z | x y"}},
		{"two roots", []string{line(a, 1, 0, "x"), line(a, 2, 0, "y"), line(a, 3, 1, "z")}, []string{"x z | y"}},
		{"two sessions", []string{line(a, 1, 0, "x"), line(b, 1, 0, "y"), line(a, 2, 1, "z")}, []string{"x z", "y"}},
		{"a parent left out", []string{line(a, 1, 0, "x"), line(a, 3, 2, "y"), line(a, 4, 1, "z")}, []string{"x y z"}},
		{"a parent after its child", []string{line(a, 2, 1, "y"), line(a, 1, 0, "x"), line(a, 3, 1, "z")}, []string{"y x z"}},
		{"a seq twice", []string{line(a, 1, 0, "x"), line(a, 2, 1, "y"), line(a, 2, 1, "z")}, []string{"x y z"}},
	} {
		out, err := Import(KindNative, []byte(strings.Join(tc.lines, "\n")), Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, imp := range out {
			s := strings.Join(texts(imp.Share.Messages), " ")
			for _, br := range imp.Share.Branches {
				s += " | " + strings.Join(texts(br.Messages), " ")
			}
			got = append(got, s)
		}
		var want []string // texts() names each message's role
		for _, w := range tc.want {
			want = append(want, userWords.Replace(w))
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("%s: imported %q, want %q", tc.name, got, want)
		}
	}
	// Any line that is not a node line makes the stream one path.
	out, err := Import(KindNative, []byte(line(a, 1, 0, "x")+"\n"+line(b, 1, 0, "y")+"\n"+`{"role":"user","content":"z"}`), Options{})
	if err != nil || len(out) != 1 || strings.Join(texts(out[0].Share.Messages), " ") != "user:x user:y user:z" {
		t.Errorf("a mixed stream imported as %d sessions (%v)", len(out), err)
	}
}
