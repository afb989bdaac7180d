package session_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// default_title_uses_basename_and_id, defaults_handle_unusual_paths_and_ids.
func TestDefaultTitle(t *testing.T) {
	name40 := strings.Repeat("abcdefghij", 4)
	cases := []struct{ project, id, want string }{
		{"/home/u/whycode", "a3f1c2d4-0000-4000-8000-000000000000", "whycode-a3"},
		{"/", "", "session-00"},
		{"/", "a3f1", "session-a3"},
		{"/tmp/a name", "--fZ3", "a-name-f3"},
		{"/home/u/test-project", testID, "test-project-3f"},
		{"/home/u/proj/", "ab", "proj-ab"},
		{"/home/u/proj///", "ab", "proj-ab"},
		{"proj", "ab", "proj-ab"},
		{".", "ab", "session-ab"},
		{"", "ab", "session-ab"},
		{"/a/-_-", "ab", "_-ab"}, // '_' is kept, only '-' is trimmed
		{"/a/--x--", "ab", "x-ab"},
		{"/a/my.project v2", "ab", "my-project-v2-ab"},
		{"/a/snake_case", "ab", "snake_case-ab"},
		{"/a/проект", "ab", "session-ab"}, // nothing ASCII is left
		{"/a/café", "ab", "caf-ab"},       // é becomes '-', then trimmed
		{"/a/x", "ABCD", "x-ab"},          // hex is lowercased
		{"/a/x", "z", "x-00"},             // no hex at all
		{"/a/x", "g1h", "x-00"},           // only one hex char
		{"/a/x", "xyz9q8", "x-98"},        // hex chars need not be adjacent
		{"/a/" + name40, "ab", name40[:32] + "-ab"},
	}
	for _, tc := range cases {
		t.Run(tc.project+"|"+tc.id, func(t *testing.T) {
			if got := session.DefaultTitle(tc.project, tc.id); got != tc.want {
				t.Errorf("DefaultTitle(%q, %q) = %q, want %q", tc.project, tc.id, got, tc.want)
			}
		})
	}
	t.Run("40-char name gives 35 chars", func(t *testing.T) {
		if got := session.DefaultTitle("/x/"+name40, testID); len(got) != 35 {
			t.Errorf("%q has %d chars", got, len(got))
		}
	})
}

// heuristic_strips_filler_and_limits_words,
// heuristic_handles_empty_paths_and_multiline_prompts.
func TestHeuristicTitle(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"reference 1", "please fix login", "fix login"},
		{"reference 2", "Hello help me repair it", "repair it"},
		{"reference 3", "@only.rs", "@only.rs"},
		{"blank", "", ""},
		{"whitespace", "  \n\t \n", ""},
		{"every filler", "Please pls CAN YOU could you Would You help me i need you to i want you to hey hi hello fix it", "fix it"},
		{"filler case-insensitive", "PLEASE Fix The Bug", "Fix The Bug"},
		{"filler needs its space", "please", "please"},
		{"filler prefix of a word", "hidden gem", "hidden gem"},
		{"filler then spaces", "please    fix", "fix"},
		{"filler in the middle stays", "fix it please now", "fix it please now"},
		{"eight words", "one two three four five six seven eight nine ten", "one two three four five six seven eight"},
		{"exactly eight", "a b c d e f g h", "a b c d e f g h"},
		{"first non-empty line", "\n\n  first line here  \nsecond line", "first line here"},
		{"@path skipped in multi-line", "@src/main.go\nfix the bug in here", "fix the bug in here"},
		{"several @paths skipped", "@a.rs\n@b/c.rs\n\nwhy does this panic?", "why does this panic?"},
		{"@path with words kept", "@a.rs explain\nmore", "@a.rs explain"},
		// whycodes falls back to the whole prompt when every line is skipped.
		{"only @paths in multi-line", "@a.rs\n@b.rs", "@a.rs @b.rs"},
		// Only a space makes an @path line a prompt, as in whycodes.
		{"tab after an @path", "@src/a.rs\tfix\nthe real prompt", "the real prompt"},
		// A filler ends in one space; whycodes does not look past a second.
		{"spaces between fillers", "please  can you do x", "can you do x"},
		{"fillers one space apart", "please can you do x", "do x"},
		{"a no-break space ends no filler", "please\u00a0fix", "please fix"},
		{"single line with trailing newline is one line", "@a.rs\n", "@a.rs"},
		{"sanitized", "please fix the login.", "fix the login"},
		{"question kept", "hey why is CI red?", "why is CI red?"},
		{"tabs collapse", "fix\tthe   bug", "fix the bug"},
		{"crlf", "@x.go\r\nrefactor this\r\n", "refactor this"},
		{"auth", "Please implement auth with OAuth tokens for the API", "implement auth with OAuth tokens for the API"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := session.HeuristicTitle(tc.in); got != tc.want {
				t.Errorf("HeuristicTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// sanitize_strips_quotes,
// sanitize_handles_quote_styles_punctuation_controls_and_caps.
func TestSanitizeTitle(t *testing.T) {
	long := strings.Repeat("a", 70)
	longE := strings.Repeat("é", 70)
	cases := []struct{ name, in, want string }{
		{"reference", "  Title.  ", "Title"},
		{"double quotes", `"Fix login"`, "Fix login"},
		{"single quotes", `'Fix login'`, "Fix login"},
		{"curly quotes", "“Fix login”", "Fix login"},
		{"quotes with inner space", `"  Fix login  "`, "Fix login"},
		{"one pair only", `""Fix""`, `"Fix"`},
		{"mismatched quotes stay", `"Fix login'`, `"Fix login'`},
		{"lone quote", `"`, `"`},
		{"just quotes", `""`, ""},
		{"quote inside", `Fix "login"`, `Fix "login"`},
		{"quoted then punctuation", `"Title."`, "Title"},
		{"trailing punctuation", "Done!!!", "Done"},
		{"mixed trailing punctuation", "a;:,.!", "a"},
		{"punctuation and spaces", "a . ! ", "a"},
		{"question kept", "Why?", "Why?"},
		{"question then dot", "Why?.", "Why?"},
		{"leading punctuation kept", "...ok", "...ok"},
		{"inner punctuation kept", "a.b, c", "a.b, c"},
		{"control chars become spaces", "tab\there\x00x\x1by", "tab here x y"},
		{"newlines collapse", "one\n\ntwo\r\nthree", "one two three"},
		{"runs of spaces", "a    b", "a b"},
		{"DEL is control", "a\x7fb", "a b"},
		{"C1 control", "a\u0085b", "a b"},
		{"empty", "", ""},
		{"only punctuation", "...", ""},
		{"64 chars kept", long[:64], long[:64]},
		{"65 chars capped", long[:65], long[:63] + "…"},
		{"70 chars capped", long, long[:63] + "…"},
		{"capped by chars not bytes", longE, strings.Repeat("é", 63) + "…"},
		{"64 multibyte chars kept", strings.Repeat("é", 64), strings.Repeat("é", 64)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := session.SanitizeTitle(tc.in)
			if got != tc.want {
				t.Errorf("SanitizeTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > 64 {
				t.Errorf("%d chars", n)
			}
		})
	}
}

// looks_like_default, default_detection_and_source_inference_cover_false_shapes.
func TestLooksLikeDefaultTitle(t *testing.T) {
	const project = "/home/u/whycode"
	cases := []struct {
		title, project string
		want           bool
	}{
		{"whycode-a3", project, true},
		{"  whycode-a3 \n", project, true},
		{"whycode-00", project, true},
		{"whycode-A3", project, true},
		{"New session - 2024-05-01T10:00:00.000Z", project, true},
		{"New session", "", true},
		{"  New session - x", project, true},
		{"new session - x", project, false},
		{"whycode-zz", project, false},
		{"whycode-a", project, false},
		{"whycode-a3f", project, false},
		{"whycode-", project, false},
		{"whycode", project, false},
		{"other-a3", project, false},
		{"whycode-a3", "/home/u/other", false},
		{"session-00", "/", true},
		{"session-4f", "", true},
		{"a-name-f3", "/tmp/a name", true},
		{"fix login", project, false},
		{"", project, false},
	}
	for _, tc := range cases {
		t.Run(tc.title+"|"+tc.project, func(t *testing.T) {
			if got := session.LooksLikeDefaultTitle(tc.title, tc.project); got != tc.want {
				t.Errorf("LooksLikeDefaultTitle(%q, %q) = %v", tc.title, tc.project, got)
			}
			wantSource := session.TitleGenerated
			if tc.want {
				wantSource = session.TitleDefault
			}
			if got := session.InferTitleSource(tc.title, tc.project); got != wantSource {
				t.Errorf("InferTitleSource = %q, want %q", got, wantSource)
			}
		})
	}
	t.Run("every default title looks like one", func(t *testing.T) {
		for _, p := range []string{"/", "", ".", "/tmp/a name", "/x/" + strings.Repeat("y", 50), "/a/проект"} {
			for _, id := range []string{testID, "", "ZZ", "--fZ3"} {
				if title := session.DefaultTitle(p, id); !session.LooksLikeDefaultTitle(title, p) {
					t.Errorf("DefaultTitle(%q, %q) = %q is not recognised", p, id, title)
				}
			}
		}
	})
}

// source_gates.
func TestTitleSourceGates(t *testing.T) {
	cases := []struct {
		src            session.TitleSource
		heuristic, llm bool
	}{
		{session.TitleDefault, true, true},
		{"", true, true}, // an unset source is the default
		{session.TitleHeuristic, false, true},
		{session.TitleGenerated, false, false},
		{session.TitleManual, false, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.src), func(t *testing.T) {
			if got := tc.src.AllowsHeuristic(); got != tc.heuristic {
				t.Errorf("AllowsHeuristic() = %v", got)
			}
			if got := tc.src.AllowsLLM(); got != tc.llm {
				t.Errorf("AllowsLLM() = %v", got)
			}
		})
	}
}

// test_new_session.
func TestNewSession(t *testing.T) {
	m := session.New(testID, "/home/u/test-project", "You are terse.", t0)
	if !strings.HasPrefix(m.Title, "test-project-") || m.TitleSource != session.TitleDefault {
		t.Errorf("title %q (%s)", m.Title, m.TitleSource)
	}
	if m.CreatedAt != t0Text || m.UpdatedAt != m.CreatedAt {
		t.Errorf("times %q %q", m.CreatedAt, m.UpdatedAt)
	}
	if m.MessageCount != 0 || m.UserMessageCount != 0 || m.Head != 0 || m.NextSeq != 1 {
		t.Errorf("counts %+v", m)
	}
	if m.ID != testID || m.ProjectPath != "/home/u/test-project" || m.SystemPrompt != "You are terse." {
		t.Errorf("fields %+v", m)
	}
	if want := session.EstimateTokens("You are terse."); m.SystemTokens != want || m.Tokens != want {
		t.Errorf("tokens %d/%d, want %d", m.SystemTokens, m.Tokens, want)
	}
	if !m.Usage.IsEmpty() || !m.Cost.IsEmpty() || !m.EditStats.IsEmpty() || !m.StreamRules.IsEmpty() || m.Checkpoint != nil {
		t.Errorf("not empty: %+v", m)
	}
}

// Title transitions: test_heuristic_and_manual_title,
// generated_and_manual_title_transitions_are_terminal,
// generated_same_title_and_block_first_user_fallbacks_are_covered.
func TestTitleTransitions(t *testing.T) {
	type step struct {
		op     string // heuristic, generated, manual
		arg    string
		ret    bool
		title  string
		source session.TitleSource
	}
	const def = "proj-3f"
	cases := []struct {
		name  string
		title string // initial title; the default when empty
		src   session.TitleSource
		steps []step
	}{
		{"heuristic then manual wins", "", "", []step{
			{"heuristic", "please add auth to the api", true, "add auth to the api", session.TitleHeuristic},
			{"manual", "  “My title.”  ", true, "My title", session.TitleManual},
			{"heuristic", "something else", false, "My title", session.TitleManual},
			{"generated", "Generated", false, "My title", session.TitleManual},
			{"manual", "Second", true, "Second", session.TitleManual},
			{"manual", "Second", true, "Second", session.TitleManual},
		}},
		{"heuristic only from default", "", "", []step{
			{"heuristic", "first prompt", true, "first prompt", session.TitleHeuristic},
			{"heuristic", "second prompt", false, "first prompt", session.TitleHeuristic},
		}},
		{"empty heuristic changes nothing", "", "", []step{
			{"heuristic", "   ", false, def, session.TitleDefault},
			{"heuristic", "real prompt", true, "real prompt", session.TitleHeuristic},
		}},
		{"heuristic equal to the title changes nothing", "fix it", session.TitleDefault, []step{
			{"heuristic", "please fix it", false, "fix it", session.TitleDefault},
		}},
		{"generated from default", "", "", []step{
			{"generated", "\"Login bug.\"", true, "Login bug", session.TitleGenerated},
			{"generated", "Other", false, "Login bug", session.TitleGenerated},
			{"heuristic", "x", false, "Login bug", session.TitleGenerated},
			{"manual", "mine", true, "mine", session.TitleManual},
		}},
		{"generated from heuristic", "", "", []step{
			{"heuristic", "fix the login", true, "fix the login", session.TitleHeuristic},
			{"generated", "Login fix", true, "Login fix", session.TitleGenerated},
		}},
		{"same generated title sets the source but returns false", "", "", []step{
			{"heuristic", "fix the login", true, "fix the login", session.TitleHeuristic},
			{"generated", "fix the login.", false, "fix the login", session.TitleGenerated},
			{"generated", "anything", false, "fix the login", session.TitleGenerated},
		}},
		{"empty generated title", "", "", []step{
			{"generated", " ... ", false, def, session.TitleDefault},
		}},
		{"empty manual title", "", "", []step{
			{"manual", "  ", false, def, session.TitleDefault},
			{"manual", `""`, false, def, session.TitleDefault},
		}},
		{"legacy placeholder is upgraded once", "New session - 2024-05-01T10:00:00.000Z", session.TitleDefault, []step{
			{"heuristic", "stripe webhooks are failing in prod", true, "stripe webhooks are failing in prod", session.TitleHeuristic},
			{"heuristic", "stripe webhooks are failing in prod", false, "stripe webhooks are failing in prod", session.TitleHeuristic},
		}},
		{"unset source behaves as default", "whatever", "", []step{
			{"heuristic", "go", true, "go", session.TitleHeuristic},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := session.New(testID, "/p/proj", "", t0)
			if tc.title != "" {
				m.Title, m.TitleSource = tc.title, tc.src
			}
			for i, s := range tc.steps {
				var ret bool
				switch s.op {
				case "heuristic":
					ret = m.ApplyHeuristicTitle(s.arg)
				case "generated":
					ret = m.ApplyGeneratedTitle(s.arg)
				case "manual":
					ret = m.SetTitleManual(s.arg)
				}
				if ret != s.ret || m.Title != s.title || m.TitleSource != s.source {
					t.Errorf("step %d %s(%q) = %v, title %q (%s); want %v, %q (%s)",
						i, s.op, s.arg, ret, m.Title, m.TitleSource, s.ret, s.title, s.source)
				}
			}
		})
	}
}

// upgrade_from_history_uses_first_user_message: a legacy placeholder takes
// the title of the first user message, not of a later one, and only once.
func TestUpgradeFromHistoryUsesFirstUserMessage(t *testing.T) {
	m := session.New(testID, "/p/proj", "", t0)
	m.Title, m.TitleSource = "New session - 2026-01-01", session.TitleDefault
	path := []session.Message{
		text(session.RoleUser, "Please fix the stripe webhook timeout"),
		text(session.RoleAssistant, "Looking into it."),
		text(session.RoleUser, "also check retries"),
	}
	if !m.UpgradeTitleFromHistory(path) {
		t.Fatal("not upgraded")
	}
	if m.Title != "fix the stripe webhook timeout" || m.TitleSource != session.TitleHeuristic {
		t.Errorf("title %q (%s)", m.Title, m.TitleSource)
	}
	if m.UpgradeTitleFromHistory(path) {
		t.Error("upgraded twice")
	}
	// A "project-ab" placeholder is upgraded too; a real title never is.
	d := session.New(testID, "/p/proj", "", t0)
	if !d.UpgradeTitleFromHistory(path) || d.Title != "fix the stripe webhook timeout" {
		t.Errorf("placeholder: %q", d.Title)
	}
	g := session.New(testID, "/p/proj", "", t0)
	g.ApplyGeneratedTitle("Webhook work")
	if g.UpgradeTitleFromHistory(path) || g.Title != "Webhook work" {
		t.Errorf("generated title replaced: %q", g.Title)
	}
	// title_and_snippet_noop_branches_are_observable: nothing to upgrade from.
	e := session.New(testID, "/p/proj", "", t0)
	if e.UpgradeTitleFromHistory(nil) || e.TitleSource != session.TitleDefault {
		t.Error("upgraded from nothing")
	}
}

// first_user_text_joins_blocks_and_skips_empty, with
// generated_same_title_and_block_first_user_fallbacks_are_covered: the
// first text block of the first user message; first_assistant_snippet cuts
// the first assistant text.
func TestFirstUserTextJoinsBlocksAndSkipsEmpty(t *testing.T) {
	if _, ok := session.FirstUserText(nil); ok {
		t.Error("text of no messages")
	}
	if _, ok := session.FirstAssistantSnippet(nil, 10); ok {
		t.Error("snippet of no messages")
	}
	img := session.Block{Type: session.BlockImage, Source: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"x"}`)}
	path := []session.Message{
		blocks(session.RoleUser, cpTextBlock("first line"), toolUse("t1", "grep", `{}`), cpTextBlock("second line")),
		text(session.RoleAssistant, "a longer assistant reply"),
	}
	if got, ok := session.FirstUserText(path); !ok || got != "first line" {
		t.Errorf("FirstUserText = %q, %v", got, ok)
	}
	for max, want := range map[int]string{7: "a longe", 100: "a longer assistant reply"} {
		if got, ok := session.FirstAssistantSnippet(path, max); !ok || got != want {
			t.Errorf("FirstAssistantSnippet(%d) = %q, %v", max, got, ok)
		}
	}
	fallback := []session.Message{blocks(session.RoleUser, img, cpTextBlock("fallback text"), cpTextBlock("second"))}
	if got, _ := session.FirstUserText(fallback); got != "fallback text" {
		t.Errorf("after an image: %q", got)
	}
	// title_and_snippet_noop_branches_are_observable: an image-only first
	// message has no text, blank assistant text is passed over, and text
	// blocks are joined by spaces and trimmed.
	noop := []session.Message{
		blocks(session.RoleUser, img),
		text(session.RoleUser, "later prompt"),
		text(session.RoleAssistant, "   "),
		blocks(session.RoleAssistant, img),
		blocks(session.RoleAssistant, cpTextBlock(" block"), cpTextBlock("reply ")),
	}
	if got, ok := session.FirstUserText(noop); ok {
		t.Errorf("image-only first message gave %q", got)
	}
	if got, _ := session.FirstAssistantSnippet(noop, 100); got != "block reply" {
		t.Errorf("snippet %q", got)
	}
	if got, _ := session.FirstAssistantSnippet([]session.Message{text(session.RoleAssistant, "ééé")}, 2); got != "éé" {
		t.Errorf("snippet cut inside a character: %q", got)
	}
}

// first_user_text_skips_whitespace_only_first_message: only the first user
// message counts, so a blank one gives none even with a real one after.
// Ours: notes and summaries are not the user's turn.
func TestFirstUserTextSkipsWhitespaceOnlyFirstMessage(t *testing.T) {
	path := []session.Message{text(session.RoleUser, "   "), text(session.RoleUser, "real question")}
	if got, ok := session.FirstUserText(path); ok {
		t.Errorf("got %q", got)
	}
	summarised := []session.Message{
		cpKind(session.KindSummary, session.RoleUser, "[3 earlier messages trimmed for context management (user=1, assistant=1, tool=1)]"),
		cpKind(session.KindNote, session.RoleUser, "a task finished"),
		text(session.RoleUser, session.CompactedMarker+"\nold stub"),
		text(session.RoleUser, "the real prompt"),
	}
	if got, _ := session.FirstUserText(summarised); got != "the real prompt" {
		t.Errorf("got %q", got)
	}
}

// An import is titled by what the user asked, not by the text an agent
// wrapped it in: Codex's IDE context (testdata/fixtures/codex/ide-context.jsonl),
// Claude Code's accepted plan (Entire's published sessions: 86 of 443
// titled "Implement the following plan") and Codex's image placeholders.
func TestImportTitleReadsTheRequest(t *testing.T) {
	for _, c := range []struct{ prompt, title string }{
		{"# Context from my IDE setup:\n\n## Active file: go.mod\n\n## Open tabs:\n- go.mod: go.mod\n\n## My request for Codex:\nalign the go version in go.mod\n", "align the go version in go.mod"},
		{"# Files mentioned by the user:\n\n## shot.png: /tmp/shot.png\n\n## My request for Codex:\nFix the command execution.", "Fix the command execution"},
		{"# Context from my IDE setup:\n\n## Active file: a.go\n", "# Context from my IDE setup"}, // no request: nothing to unwrap
		{"Implement the following plan:\n\n# Implementation Plan: `entire reset` Command\n\n## Overview\nAdd a command.", "Implementation Plan: `entire reset` Command"},
		{"[Image #1] [Image #2]\n\nwhich of these is right?", "which of these is right?"},
		{"[Image #1]", "[Image #1]"},
		{"see [Image #1] here", "see [Image #1] here"},
	} {
		sh := session.Share{Messages: []session.Message{text(session.RoleUser, c.prompt), text(session.RoleAssistant, "ok")}}
		meta, _ := session.FromShare(&sh, testID, t0)
		if meta.Title != c.title || meta.TitleSource != session.TitleHeuristic {
			t.Errorf("%q titles %q (%s), want %q", c.prompt, meta.Title, meta.TitleSource, c.title)
		}
	}
}
