// Package request builds provider request bodies from a session's path:
// Anthropic's Messages API (AnthropicRequest) and OpenAI's Chat
// Completions API (OpenAIRequest), from a copy of the path that the
// stored transcript never sees.
package request
