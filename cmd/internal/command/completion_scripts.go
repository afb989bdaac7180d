package command

import "strings"

// The scripts ask the command being completed for its candidates (see
// complete.go), so that they know nothing of the commands themselves but
// their names.

const bashCompletion = `# bash completion for the wc commands: source <(wc-ls --completion bash)
_wc_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n' out line
	local -a values described
	out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
	if [[ $out == :files* ]]; then
		[[ $cur == = ]] && cur=
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
	fi
	for line in $out; do
		values+=("${line%%$'\t'*}")
		described+=("${line/$'\t'/  }")
	done
	COMPREPLY=("${values[@]}")
	# Several sessions: show their titles too (their ids differ, so what
	# bash inserts is still the ids' common prefix).
	if (( ${#values[@]} > 1 )) && [[ $out == *$'\t'* && ${values[0]} != -* ]]; then
		COMPREPLY=("${described[@]}")
	fi
}
complete -F _wc_complete COMMANDS
`

const zshCompletion = `#compdef COMMANDS
# zsh completion for the wc commands: wc-ls --completion zsh > "${fpath[1]}/_wc"
_wc() {
	local -a out cands
	local line value
	out=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	if [[ ${out[1]} == :files ]]; then
		_files
		return
	fi
	for line in $out; do
		[[ -z $line ]] && continue
		value=${line%%$'\t'*}
		if [[ $line == *$'\t'* ]]; then
			cands+=("${value//:/\\:}:${line#*$'\t'}")
		else
			cands+=("${value//:/\\:}")
		fi
	done
	_describe -t wc 'wc' cands
}
if [[ $funcstack[1] == _wc ]]; then
	_wc "$@"
else
	compdef _wc COMMANDS
fi
`

const fishCompletion = `# fish completion for the wc commands: wc-ls --completion fish | source
function __wc_complete
	set -l tokens (commandline -opc) (commandline -ct)
	set -l out ($tokens[1] __complete $tokens[2..-1] 2>/dev/null)
	if test "$out[1]" = :files
		__fish_complete_path (commandline -ct)
		return
	end
	printf '%s\n' $out
end
for command in COMMANDS
	complete -c $command -f -a '(__wc_complete)'
end
`

// printCompletion writes the completion script for shell.
func (c *Ctx) printCompletion(shell string) error {
	script, ok := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[shell]
	if !ok {
		return Usagef("no completion for shell %q", shell).WithHint("shells: bash, zsh, fish")
	}
	_, err := c.out.WriteString(strings.ReplaceAll(script, "COMMANDS", strings.Join(Commands, " ")))
	return err
}
