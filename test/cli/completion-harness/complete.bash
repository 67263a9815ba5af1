# bash completion-harness/complete.bash SCRIPT WORD...: loads SCRIPT, calls
# _mailcairn as bash's completion would for the words (the last one under the
# cursor) and prints COMPREPLY, one candidate a line.
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
_mailcairn
printf '%s\n' "${COMPREPLY[@]}"
