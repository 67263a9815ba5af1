# zsh -f completion-harness/complete.zsh FPATH-DIR WORD...: autoloads
# _mailcairn from FPATH-DIR (as compinit would) and calls it with `words` and
# CURRENT set, the last word under the cursor. A real completion needs a line
# editor on a terminal, so compadd is a function here: it prints the
# candidates that start with the word under the cursor (zsh's default
# matching), one a line; _files prints a marker.
fpath=("$1" $fpath)
shift
autoload -Uz _mailcairn
compadd() {
  local i=${@[(i)--]}
  print -rl -- ${(M)${(@)@[i+1,-1]}:#${(b)PREFIX}*}
}
_files() { print -r -- '<files>'; }
words=("$@")
CURRENT=$#
PREFIX=${words[CURRENT]}
_mailcairn
