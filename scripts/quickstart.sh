#!/bin/sh
# A first look at wc: create a session, add a turn, list it and read it back.
# Runs against the store in WC_STORE, or the default store.
set -eu

wc-new --project "$PWD" --system "You are a terse coding agent." \
	| wc-append --role user --text "Fix the login bug: expired sessions still get in." \
	| wc-append --role assistant --text "The expiry check in auth.go compares with < instead of <=; fixed." \
	| wc-append --usage '{"input_tokens":1200,"output_tokens":85}' --cost 0.0042 \
	| wc-export --format markdown

echo "--- the five sessions updated last:"
wc-ls --table --limit 5
