package session

import "strings"

// CompactContinuationPreamble opens every LLM compaction summary carrier.
const CompactContinuationPreamble = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation."

// CompactedMarker opens a summary prepended to the transcript.
const CompactedMarker = "[Compacted earlier conversation]"

// IsCompactSummaryText reports whether t is a compaction stub or carrier.
func IsCompactSummaryText(t string) bool {
	t = strings.TrimLeft(t, " \t\r\n")
	return strings.HasPrefix(t, "[Compacted") || strings.HasPrefix(t, "This session is being continued")
}
