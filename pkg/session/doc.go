// Package session is the model of a coding agent's conversation, as
// whycodes' Session has it, and its operations: a session's metadata
// (Meta) and its tree of messages (Node, Message, Block), appending,
// compacting, branching and rewinding a path, titles, token estimates,
// tool-output caps and edit stats, and the share (Share) that
// whycodes loads, written byte for byte as serde_json writes it
// (jsonenc.go).
//
// It is pure: no os, no clock (callers pass the time), no store. It imports
// gjson only. The store's record formats are in store/record, the
// renderers in render, other agents' formats in format, provider request
// bodies in request: each of those imports this package, never the
// reverse.
package session
