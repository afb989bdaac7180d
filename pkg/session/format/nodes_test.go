package format

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// paths renders an imported session as wc-new stores it: the head's path,
// then " | " and each branch's (after its name and "=" when named), by the
// text of each message.
func paths(t *testing.T, sh *session.Share) string {
	t.Helper()
	m, nodes := session.FromShare(sh, "5a1b0000-0000-4000-8000-0000000000ff", time.Unix(0, 0))
	bySeq := map[uint64]session.Node{}
	for _, n := range nodes {
		bySeq[n.Seq] = n
	}
	path := func(seq uint64) string {
		var out []string
		for ; seq != 0; seq = bySeq[seq].Parent {
			n := bySeq[seq]
			text, _ := n.Msg.AsText()
			out = append([]string{text}, out...)
		}
		return strings.Join(out, " ")
	}
	s := path(m.Head)
	for _, b := range m.Branches {
		s += " | "
		if b.Name != "" {
			s += b.Name + "="
		}
		s += path(b.Seq)
	}
	return s
}

// Which node lines come back as a tree, which as a path, and which are
// refused.
func TestImportNodeLines(t *testing.T) {
	line := func(id string, seq, parent any, role, text string) string {
		return fmt.Sprintf(`{"id":%q,"seq":%v,"parent":%v,"message":{"role":%q,"content":%q}}`, id, seq, parent, role, text)
	}
	u := func(seq, parent any, text string) string {
		return line("5a1b0000-0000-4000-8000-000000000000", seq, parent, "user", text)
	}
	// um is u with members after the parent: what a tree's lines say of
	// the head and the branch names.
	um := func(seq, parent int, members, text string) string {
		return fmt.Sprintf(`{"id":"5a1b0000-0000-4000-8000-000000000000","seq":%d,"parent":%d,%s,"message":{"role":"user","content":%q}}`, seq, parent, members, text)
	}
	const b = "6c2d0000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // per session, "; " between; or the error
	}{
		{"path", []string{u(1, 0, "x"), u(2, 1, "y")}, "x y"},
		{"one line", []string{u(1, 0, "x")}, "x"},
		{"tree", []string{u(1, 0, "x"), u(2, 1, "y"), u(3, 1, "z")}, "x z | x y"},
		{"two roots", []string{u(1, 0, "x"), u(2, 0, "y"), u(3, 1, "z")}, "x z | y"},
		{"same siblings", []string{u(1, 0, "x"), u(2, 1, "y"), u(3, 1, "y")}, "x y | x y"},
		{"two sessions", []string{u(1, 0, "x"), line(b, 1, 0, "user", "y"), u(2, 1, "z")}, "x z; y"},
		{"one session without turns", []string{u(1, 0, "x"), line(b, 1, 0, "system", "s")}, "x; s"},
		{"a path thinned", []string{u(1, 0, "x"), u(3, 2, "y"), u(5, 4, "z")}, "x y z"},
		{"a tree thinned", []string{u(1, 0, "x"), u(3, 2, "y"), u(4, 1, "z")}, "line 3: session 5a1b0000-0000-4000-8000-000000000000: the lines are neither"},
		{"a parent after its child", []string{u(2, 1, "y"), u(1, 0, "x")}, "line 2: session"},
		{"a seq twice", []string{u(1, 0, "x"), u(2, 1, "y"), u(2, 1, "z")}, "line 3: node 2 of session"},
		// Lines not in wc's spelling are plain messages, which make the
		// stream one path.
		{"a fraction", []string{u(1, 0, "x"), u(2.5, 1, "y"), u(3, 1, "z")}, "x y z"},
		{"a negative parent", []string{u(1, 0, "x"), u(2, -1, "y"), u(3, 1, "z")}, "x y z"},
		{"a null parent", []string{u(1, 0, "x"), u(2, "null", "y"), u(3, 1, "z")}, "x y z"},
		{"a string seq", []string{u(1, 0, "x"), u(`"2"`, 1, "y"), u(3, 1, "z")}, "x y z"},
		{"seq 0", []string{u(0, 0, "x"), u(1, 0, "y"), u(2, 0, "z")}, "x y z"},
		{"no turns", []string{line(b, 1, 0, "system", "s")}, "no user or assistant messages"},
		// A tree's lines that say which node is the head or where the
		// branches end ("" unnamed) say all of it: no other leaf becomes
		// a branch, and without a head the path is empty.
		{"head marked", []string{u(1, 0, "x"), um(2, 1, `"head":true`, "y"), u(3, 1, "z")}, "x y"},
		{"head inside", []string{u(1, 0, "x"), um(2, 1, `"head":true,"branches":[""]`, "y"), u(3, 2, "z")}, "x y | x y"},
		{"head the leaf", []string{u(1, 0, "x"), um(2, 1, `"head":true`, "y")}, "x y"},
		{"names", []string{um(1, 0, `"branches":["a"]`, "x"), um(2, 1, `"branches":[""]`, "y"), um(3, 1, `"head":true`, "z")}, "x z | a=x | x y"},
		{"names in order", []string{u(1, 0, "x"), um(2, 1, `"head":true,"branches":["zeta","alpha",""]`, "y")}, "x y | zeta=x y | alpha=x y | x y"},
		{"a name twice", []string{um(1, 0, `"branches":["a"]`, "x"), um(2, 1, `"head":true,"branches":["a"]`, "y")}, "x y | a=x | a=x y"},
		{"no head", []string{u(1, 0, "x"), um(2, 1, `"branches":["b"]`, "y"), u(3, 1, "z")}, " | b=x y"},
		{"head false", []string{um(1, 0, `"head":false`, "x")}, `line 1: "head" must be true`},
		{"head a string", []string{um(1, 0, `"head":"yes"`, "x")}, `line 1: "head" must be true`},
		{"branches a string", []string{um(1, 0, `"branches":"a"`, "x")}, `line 1: "branches" must be an array of names`},
		{"a number for a name", []string{um(1, 0, `"branches":[1]`, "x")}, `line 1: "branches" must be an array of names`},
		{"a name that is a number", []string{um(1, 0, `"branches":["7"]`, "x")}, `line 1: a branch name cannot be a number`},
		{"a name with spaces around", []string{um(1, 0, `"branches":[" a "]`, "x")}, `line 1: a branch name cannot start or end with space`},
		{"a name with a newline", []string{um(1, 0, `"branches":["a\nb"]`, "x")}, `line 1: a branch name cannot hold control characters`},
		{"two heads", []string{um(1, 0, `"head":true`, "x"), um(2, 1, `"head":true`, "y")}, "line 2: session 5a1b0000-0000-4000-8000-000000000000 has two heads"},
	} {
		out, err := Import(KindAuto, []byte(strings.Join(tc.lines, "\n")), Options{})
		var got []string
		for i := range out {
			got = append(got, paths(t, &out[i].Share))
		}
		if err != nil {
			got = []string{err.Error()}
		}
		if s := strings.Join(got, "; "); !strings.HasPrefix(s, tc.want) {
			t.Errorf("%s: imported %q, want %q", tc.name, s, tc.want)
		}
	}
	// Any line that is not a node line makes the stream one path.
	out, err := Import(KindNative, []byte(u(1, 0, "x")+"\n"+line(b, 1, 0, "user", "y")+"\n"+`{"role":"user","content":"z"}`), Options{})
	if err != nil || len(out) != 1 || paths(t, &out[0].Share) != "x y z" {
		t.Errorf("a mixed stream imported as %d sessions (%v)", len(out), err)
	}
}

// A long session with a branch at every turn imports in time and memory
// linear in its nodes (copies of every path from the root took 7 s and
// 1.7 GB for 3,000 turns).
func BenchmarkImportNodeTree(b *testing.B) {
	var lines []string
	for i := 1; i <= 3000; i++ {
		chain, leaf := 2*i-1, 2*i
		parent := max(0, chain-2)
		lines = append(lines,
			fmt.Sprintf(`{"id":"5a1b","seq":%d,"parent":%d,"message":{"role":"user","content":"turn %d"}}`, chain, parent, i),
			fmt.Sprintf(`{"id":"5a1b","seq":%d,"parent":%d,"message":{"role":"assistant","content":"aside %d"}}`, leaf, chain, i))
	}
	data := []byte(strings.Join(lines, "\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := Import(KindAuto, data, Options{})
		if err != nil || len(out) != 1 {
			b.Fatal(err)
		}
		if _, nodes := session.FromShare(&out[0].Share, "5a1b0000-0000-4000-8000-0000000000ff", time.Unix(0, 0)); len(nodes) != 6000 {
			b.Fatalf("%d nodes", len(nodes))
		}
	}
}
