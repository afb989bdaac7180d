// Package format reads and writes transcripts in formats other than wc's own
// records: message streams, provider request and response bodies, and other
// agents' session files (Claude Code, Codex, Cursor, Gemini, OpenCode,
// whycodes' SQLite rows), as shares of the model.
//
// It imports the model (package session), gjson and sjson; nothing of the
// store, the renderers or the commands.
package format
