// Package request builds provider request bodies from a session's path:
// Anthropic's Messages API (Anthropic) and OpenAI's Chat
// Completions API (OpenAI). A body is made from a copy of the path,
// which the stored transcript never sees, made valid for the provider (the
// rules are in wc-export(1) and internal/wirecheck):
//
//   - pairing: every tool call is answered right after its message (an
//     unanswered one with MissingResult), a result that answers no call is
//     left out;
//   - content the provider cannot take is left out or becomes text:
//     whitespace-only text, thinking without a signature, the other
//     provider's reasoning and server-tool blocks, images and documents it
//     cannot read;
//   - a tool input that is not a JSON object is sent as {"input": it}, a
//     call without an id gets one, ids are made unique (and, for
//     Anthropic, of the characters it allows).
//
// It imports the model (package session) and gjson, nothing of the store.
package request
