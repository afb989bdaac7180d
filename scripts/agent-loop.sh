#!/bin/sh
# A complete coding-agent loop in shell over the Anthropic Messages API.
# The model may call one tool, "bash", which runs a command in the current
# directory and returns its output: run it only where that is safe.
#
# Usage: agent-loop.sh PROMPT
# Environment:
#   ANTHROPIC_API_KEY  the API key (required)
#   WC_API_URL         the endpoint (default https://api.anthropic.com/v1/messages)
#   WC_MODEL           the model (default claude-sonnet-4-5)
#   WC_MAX_TURNS       model calls before giving up (default 10)
#   WC_SESSION         continue this session instead of starting one
# Prints the model's final text; the session id goes to stderr.
set -eu
prompt=${1:?usage: agent-loop.sh PROMPT}
: "${ANTHROPIC_API_KEY:?set ANTHROPIC_API_KEY}"
url=${WC_API_URL:-https://api.anthropic.com/v1/messages}
model=${WC_MODEL:-claude-sonnet-4-5}
max_turns=${WC_MAX_TURNS:-10}

tools=$(mktemp)
trap 'rm -f "$tools"' EXIT
cat >"$tools" <<'JSON'
[{"name": "bash", "description": "Run a shell command and return its output.",
  "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
JSON

if [ -n "${WC_SESSION:-}" ]; then
	id=$WC_SESSION
else
	id=$(wc-new --system "You are a coding agent. Use the bash tool to look at and change files." | jq -r .id)
fi
echo "session $id" >&2
wc-append "$id" --role user --text "$prompt" >/dev/null

turn=0
while [ "$turn" -lt "$max_turns" ]; do
	turn=$((turn + 1))
	response=$(wc-export "$id" --format request --provider anthropic --model "$model" --tools "$tools" |
		curl -sS --fail-with-body "$url" \
			-H "x-api-key: $ANTHROPIC_API_KEY" -H "anthropic-version: 2023-06-01" \
			-H "content-type: application/json" --data-binary @-)
	# The response body is a message: wc-append records it and its usage.
	printf '%s' "$response" | wc-append "$id" --unpriced >/dev/null
	calls=$(printf '%s' "$response" | jq -c '.content[]? | select(.type == "tool_use")')
	if [ -z "$calls" ]; then
		printf '%s' "$response" | jq -r '[.content[]? | select(.type == "text") | .text] | join("\n")'
		exit 0
	fi
	printf '%s\n' "$calls" | while IFS= read -r call; do
		call_id=$(printf '%s' "$call" | jq -r .id)
		command=$(printf '%s' "$call" | jq -r '.input.command // ""')
		failed=
		output=$(sh -c "$command" 2>&1) || failed=--error
		printf '%s' "$output" | wc-append "$id" --role tool --tool-call-id "$call_id" $failed >/dev/null
	done
done
echo "agent-loop: no answer after $max_turns turns" >&2
exit 1
