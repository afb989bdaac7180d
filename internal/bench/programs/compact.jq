def notice($n): "\n\n[... \($n) characters truncated for context management]";
def cap($max): if type == "string" and length > $max
  then (.[:$max] + notice(length - $max)) as $out | if ($out | length) < length then $out else . end else . end;
([to_entries[] | select(.value.role == "tool") | .key]) as $tools
| ($tools[:([($tools | length) - 4, 0] | max)]) as $old
| map(if .role == "tool" then .content |= cap(32768) else . end)
| reduce $old[] as $i (.; .[$i].content |= cap(2048))
| .[]
