#!/bin/sh
# Installs wc under PREFIX (default /usr/local): scripts/install.sh [PREFIX]
#   PREFIX/bin                                   the eight programs
#   PREFIX/share/man/man1                        their man pages
#   PREFIX/share/bash-completion/completions     bash completion, a file per command
#   PREFIX/share/zsh/site-functions/_wc          zsh completion
#   PREFIX/share/fish/vendor_completions.d       fish completion, a file per command
# DESTDIR, when set, is put before every path (for packaging). Needs go.
set -eu
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
case $prefix in
/*) ;;
*) prefix=$PWD/$prefix ;;
esac
root=${DESTDIR:-}$prefix
bin=$root/bin
man=$root/share/man/man1
bash=$root/share/bash-completion/completions
zsh=$root/share/zsh/site-functions
fish=$root/share/fish/vendor_completions.d
mkdir -p "$bin" "$man" "$bash" "$zsh" "$fish"

# The build tag leaves out urfave/cli's document generators, which wc does not use.
go build -tags urfave_cli_no_docs -o "$bin/" ./cmd/...

for page in man/wc-*.1; do
	cp "$page" "$man/"
	chmod 0644 "$man/${page#man/}"
done
"$bin/wc-ls" --completion zsh > "$zsh/_wc"
for page in man/wc-*.1; do
	command=${page#man/}
	command=${command%.1}
	"$bin/wc-ls" --completion bash > "$bash/$command"
	"$bin/wc-ls" --completion fish > "$fish/$command.fish"
done
chmod 0644 "$zsh/_wc" "$bash"/wc-* "$fish"/wc-*.fish

echo "installed wc in $root: put $prefix/bin on PATH; man wc-ls; completion for bash, zsh and fish"
