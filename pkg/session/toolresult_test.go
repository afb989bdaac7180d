package session_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

func notice(n int) string {
	return "\n\n[... " + strconv.Itoa(n) + " characters truncated for context management]"
}

func TestCapConstants(t *testing.T) {
	if session.ToolResultMaxChars != 32_768 || session.ToolResultPruneChars != 2_048 || session.ToolResultShakeChars != 512 {
		t.Error("caps differ from reference §2.1")
	}
}

// The cap rule of reference §2.2, including image_payload_parsing_and_
// unicode_caps_cover_boundaries ("1 characters truncated").
func TestCapToolText(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want string
		cut  bool
	}{
		{"empty", "", 10, "", false},
		{"under", "abc", 10, "abc", false},
		{"exactly max", "0123456789", 10, "0123456789", false},
		{"one over", "0123456789X", 10, "0123456789" + notice(1), true},
		{"many over", strings.Repeat("x", 25), 10, strings.Repeat("x", 10) + notice(15), true},
		// Bytes over the cap but chars within it: unchanged.
		{"bytes over, chars within", strings.Repeat("é", 10), 10, strings.Repeat("é", 10), false},
		{"bytes over, chars exactly", strings.Repeat("😀", 10), 10, strings.Repeat("😀", 10), false},
		// Cut on a char boundary, counting chars.
		{"multibyte one over", strings.Repeat("é", 11), 10, strings.Repeat("é", 10) + notice(1), true},
		{"mixed", "ab" + strings.Repeat("中", 10), 5, "ab中中中" + notice(7), true},
		{"emoji", strings.Repeat("😀", 12), 4, strings.Repeat("😀", 4) + notice(8), true},
		{"max zero", "abc", 0, notice(3), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := session.CapToolText(tc.in, tc.max)
			if got != tc.want || cut != tc.cut {
				t.Errorf("CapToolText(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, cut, tc.want, tc.cut)
			}
			if !utf8.ValidString(got) {
				t.Error("cut inside a char")
			}
		})
	}
}

// test_add_tool_results_caps_huge_body.
func TestToolResultContentCapsHugeBody(t *testing.T) {
	body := strings.Repeat("0123456789", 5000) // 50,000 chars
	c, capped := session.ToolResultContent(body)
	if !capped || c.IsBlocks {
		t.Fatalf("capped %v, blocks %v", capped, c.IsBlocks)
	}
	if n := utf8.RuneCountInString(c.Text); n >= session.ToolResultMaxChars+200 {
		t.Errorf("%d chars", n)
	}
	if !strings.HasSuffix(c.Text, notice(50000-session.ToolResultMaxChars)) {
		t.Errorf("notice missing: %q", c.Text[len(c.Text)-80:])
	}
	if !strings.HasPrefix(c.Text, body[:session.ToolResultMaxChars]) {
		t.Error("head not kept")
	}
	t.Run("at the cap", func(t *testing.T) {
		body := strings.Repeat("x", session.ToolResultMaxChars)
		c, capped := session.ToolResultContent(body)
		if capped || c.Text != body {
			t.Error("a body at the cap was changed")
		}
	})
}

// Image payloads (reference §2.2): both marker spellings, the preface rules
// and the three shapes that stay text.
func TestToolResultContentImagePayload(t *testing.T) {
	cases := []struct {
		name, in, want string // want: content JSON
	}{
		{"whycodes marker", "WHYCODES_IMAGE_B64:image/png\niVBORw0KGgo=",
			`[{"type":"text","text":"[image image/png]"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]`},
		{"whycode marker", "WHYCODE_IMAGE_B64:image/jpeg\n/9j/4AAQ",
			`[{"type":"text","text":"[image image/jpeg]"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}}]`},
		{"preface is the trimmed text before the marker", "  Screenshot of the page:\n\nWHYCODES_IMAGE_B64:image/png\nAAAA",
			`[{"type":"text","text":"Screenshot of the page:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`},
		{"blank preface", " \n WHYCODE_IMAGE_B64:image/gif\nR0lG",
			`[{"type":"text","text":"[image image/gif]"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lG"}}]`},
		{"media and data trimmed", "WHYCODES_IMAGE_B64: image/webp \r\n UklG \n",
			`[{"type":"text","text":"[image image/webp]"},{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklG"}}]`},
		{"empty media type is text", "WHYCODES_IMAGE_B64:\nAAAA", `"WHYCODES_IMAGE_B64:\nAAAA"`},
		{"blank media type is text", "WHYCODES_IMAGE_B64:  \nAAAA", `"WHYCODES_IMAGE_B64:  \nAAAA"`},
		{"empty data is text", "WHYCODE_IMAGE_B64:image/png\n", `"WHYCODE_IMAGE_B64:image/png\n"`},
		{"blank data is text", "WHYCODE_IMAGE_B64:image/png\n  \n", `"WHYCODE_IMAGE_B64:image/png\n  \n"`},
		{"no newline is text", "WHYCODES_IMAGE_B64:image/png AAAA", `"WHYCODES_IMAGE_B64:image/png AAAA"`},
		{"no marker", "image/png\nAAAA", `"image/png\nAAAA"`},
		{"lowercase marker is not one", "whycodes_image_b64:image/png\nAAAA", `"whycodes_image_b64:image/png\nAAAA"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, capped := session.ToolResultContent(tc.in)
			if capped {
				t.Error("reported capped")
			}
			if got := string(c.AppendJSON(nil)); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("a large image is not capped", func(t *testing.T) {
		data := strings.Repeat("A", 3*session.ToolResultMaxChars)
		c, capped := session.ToolResultContent("WHYCODES_IMAGE_B64:image/png\n" + data)
		if capped || !c.IsBlocks || len(c.Blocks) != 2 || !strings.Contains(string(c.Blocks[1].Source), data) {
			t.Errorf("capped %v, content %.200s", capped, c.AppendJSON(nil))
		}
	})
}

func TestParseEditTrailers(t *testing.T) {
	cases := []struct {
		name           string
		in             string
		added, removed uint64
		ok             bool
	}{
		{"single", "Edited a.go\n[+3 -1]", 3, 1, true},
		{"trailing newline", "ok\n[+3 -1]\n", 3, 1, true},
		{"indented", "ok\n  [+3 -1]  ", 3, 1, true},
		{"multi-file summed", "a.go\n[+3 -1]\nb.go\n[+10 -0]\nc.go\n[+0 -7]", 13, 8, true},
		{"zero", "[+0 -0]", 0, 0, true},
		{"none", "Edited a.go", 0, 0, false},
		{"empty", "", 0, 0, false},
		{"inline is not a trailer", "changed [+3 -1] lines", 0, 0, false},
		{"missing minus", "[+3 1]", 0, 0, false},
		{"negative", "[+-3 -1]", 0, 0, false},
		{"not numbers", "[+a -b]", 0, 0, false},
		{"no closing bracket", "[+3 -1", 0, 0, false},
		{"extra space", "[+3  -1]", 0, 0, false},
		{"bad line among good", "[+1 -1]\n[+x -1]\n[+2 -0]", 3, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, r, ok := session.ParseEditTrailers(tc.in)
			if a != tc.added || r != tc.removed || ok != tc.ok {
				t.Errorf("ParseEditTrailers(%q) = %d, %d, %v", tc.in, a, r, ok)
			}
		})
	}
}

func TestEditStatsRecord(t *testing.T) {
	type rec struct {
		tool, content string
		isErr         bool
	}
	cases := []struct {
		name string
		recs []rec
		want session.EditStats
	}{
		{"apply_patch is exact", []rec{{"apply_patch", "a.go\n[+3 -1]", false}}, session.EditStats{Added: 3, Removed: 1}},
		{"apply_patch multi-file", []rec{{"apply_patch", "a\n[+3 -1]\nb\n[+2 -2]", false}}, session.EditStats{Added: 5, Removed: 3}},
		{"edit is approximate", []rec{{"edit", "[+3 -1]", false}}, session.EditStats{Added: 3, Removed: 1, Approximate: true}},
		{"write is approximate", []rec{{"write", "[+40 -0]", false}}, session.EditStats{Added: 40, Approximate: true}},
		{"no trailer is approximate", []rec{{"apply_patch", "output truncated", false}}, session.EditStats{Approximate: true}},
		{"errors ignored", []rec{{"apply_patch", "[+3 -1]", true}, {"edit", "no trailer", true}}, session.EditStats{}},
		{"other tools ignored", []rec{{"bash", "[+3 -1]", false}, {"", "[+1 -1]", false}, {"Edit", "[+1 -1]", false}}, session.EditStats{}},
		{"sums", []rec{{"apply_patch", "[+1 -2]", false}, {"apply_patch", "[+10 -20]", false}}, session.EditStats{Added: 11, Removed: 22}},
		{"approximate sticks", []rec{{"edit", "[+1 -0]", false}, {"apply_patch", "[+1 -0]", false}}, session.EditStats{Added: 2, Approximate: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e session.EditStats
			for _, r := range tc.recs {
				e.Record(r.tool, r.content, r.isErr)
			}
			if e != tc.want {
				t.Errorf("got %+v, want %+v", e, tc.want)
			}
			if e.IsEmpty() != (tc.want.Added == 0 && tc.want.Removed == 0) {
				t.Error("IsEmpty")
			}
		})
	}
	if strings.Join(session.CountedTools, ",") != "write,edit,apply_patch" {
		t.Errorf("CountedTools = %v", session.CountedTools)
	}
}
