def oneline: [splits("[ \t\n\r\f\u000b]+")] | map(select(. != "")) | join(" ");
def runlen: [match("`+"; "g").length] | max // 0;
def codespan: oneline as $s | ("`" * (($s | runlen) + 1)) as $d
  | (if ($s | startswith("`")) or ($s | endswith("`")) then " " else "" end) as $p | $d + $p + $s + $p + $d;
def fence($info; $body): ("`" * ([3, ($body | runlen) + 1] | max)) as $f | $f + $info + "\n" + $body + "\n" + $f + "\n\n";
# A text that opens a code fence and never closes it gets it closed, as wc does.
def openfence: reduce (match("(?m)^ {0,3}(`{3,}|~{3,})([^\n]*)$"; "g")
    | {run: .captures[0].string, rest: (.captures[1].string | sub("\r+$"; ""))}) as $m (null;
  if . == null then (if ($m.run | startswith("`")) and ($m.rest | contains("`")) then . else $m.run end)
  elif ($m.run[0:1] == .[0:1]) and ($m.run | length) >= length and ($m.rest | test("^\\s*$")) then null
  else . end);
def mdtext: (if test("```|~~~") then openfence else null end) as $f
  | if $f == null then . + "\n\n" else . + (if endswith("\n") then "" else "\n" end) + $f + "\n\n" end;
def pretty: if . == null or . == {} then "{}" else "{\n" + (to_entries | map("  " + (.key | tojson) + ": " + (.value | tojson)) | join(",\n")) + "\n}" end;
def rolelabel: {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[.] // .;
def result($err): if $err then "error" else "result" end;
def block($role; $err):
  if $role == "tool" and .type == "text" then fence(result($err); .text)
  elif .type == "text" then .text | mdtext
  elif .type == "tooluse" then fence("tool"; .name + "\n" + (.input | pretty))
  elif .type == "toolresult" then fence(result(.is_error == true); (.content | if type == "string" then . else tojson end))
  elif .type == "image" then "*[image]*\n\n"
  elif .type == "thinking" then fence("thinking"; .text)
  elif .type == "redacted_thinking" then "*[redacted thinking]*\n\n"
  else "*[" + (.type | oneline | gsub("]"; "")) + "]*\n\n" end;
def message: .role as $r | (.is_error == true) as $e
  | "### " + (.role | rolelabel) + "\n\n" + (if (.content | type) == "string"
      then (if $r == "tool" then fence(result($e); .content) else .content | mdtext end)
      else ([.content[] | block($r; $e)] | add // "") end);
# wc writes a UTC time as whycodes does, +00:00 where the metadata has Z.
($meta[0] | "# " + (.title | oneline) + "\n\n- **Session:** " + (.id | codespan) + "\n- **Project:** "
  + (.project | codespan) + "\n- **Created:** " + (.created | sub("Z$"; "+00:00")) + "\n\n---\n\n"),
(inputs | message)
