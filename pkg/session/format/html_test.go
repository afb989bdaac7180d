package format

import "testing"

func TestToolCallSummary(t *testing.T) {
	cases := []struct{ name, input, want string }{
		{"Read", `{"file_path":"src/auth.go"}`, "Read(src/auth.go)"},
		{"Bash", `{"command":"go test ./...","description":"run the tests"}`, "Bash(go test ./...)"},
		{"shell", `{"cmd":"ls\n  -la"}`, "shell(ls -la)"},
		{"only", `{"n":42}`, "only(42)"},
		{"json", `{"a":1,"b":[2]}`, `json({"a":1,"b":[2]})`},
		{"none", `{}`, "none()"},
		{"missing", ``, "missing()"},
		{"long", `{"query":"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghij"}`,
			"long(abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyza…)"},
	}
	for _, c := range cases {
		if got := ToolCallSummary(c.name, []byte(c.input)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.input, got, c.want)
		}
	}
}
