/**
 * The completion scripts (docs/cli.md "Shell completion"): the model's data
 * as shell functions (shell-data.ts) and, per shell, the same walk over the
 * words already typed:
 * 1. options are set aside, and the word after an option that takes a value
 *    with it; the other words are command words and arguments;
 * 2. the longest run of leading words that names a command is the command,
 *    the words after it its arguments;
 * 3. the word being completed is then the value of the option before it, an
 *    option (it starts with `-`), or the next command word and the
 *    command's next argument.
 * Commands and options are written into the script, so completing them
 * starts no process; only profile names are asked of the client
 * (`completion --profiles`), which reads the credential file and nothing else.
 */
import type { CompletionModel } from './model.ts';
import { shellData } from './shell-data.ts';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

function header(model: CompletionModel, shell: Shell, load: string): string {
  return [
    `# ${shell} completion for ${model.program} ${model.version}, written by \`${model.program} completion ${shell}\`.`,
    `# The commands and options are this version's: write it again after an upgrade. ${load}`,
    '# (docs/cli.md "Shell completion").',
  ].join('\n');
}

function bash(model: CompletionModel): string {
  const p = model.program;
  return `${header(model, 'bash', `Load it with source <(${p} completion bash) in ~/.bashrc, or save it as ~/.local/share/bash-completion/completions/${p}.`)}

${shellData('posix', model, p)}

_${p}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} word expect='' command='' out='' line i n
  local -a positionals=() words=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    # bash splits --option=value at '=' (COMP_WORDBREAKS): the '=' is not the value.
    if [[ -n $expect && $word == = ]]; then continue; fi
    if [[ -n $expect ]]; then expect=''; continue; fi
    case $word in
      -*=*) ;;
      -*) _${p}_takes_value "$word" && expect=$word ;;
      *) positionals+=("$word") ;;
    esac
  done
  for ((n = \${#positionals[@]}; n > 0; n--)); do
    if _${p}_is_command "\${positionals[*]:0:n}"; then command=\${positionals[*]:0:n}; break; fi
  done
  if [[ -n $expect && $cur == = ]]; then cur=''; fi
  if [[ -n $expect ]]; then
    if ! out=$(_${p}_value "$command" "$expect"); then
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0
    fi
  elif [[ $cur == -* ]]; then
    out=$(_${p}_options "$command")
  else
    out=$(_${p}_children "\${positionals[*]}")
    if [[ -n $command ]]; then out+=$'\\n'$(_${p}_positional "$command" $((\${#positionals[@]} - n))); fi
  fi
  local IFS=$'\\n'
  for line in $out; do words+=("\${line%%$'\\t'*}"); done
  COMPREPLY=($(compgen -W "\${words[*]}" -- "$cur"))
  return 0
}

complete -F _${p} ${p}
`;
}

function zsh(model: CompletionModel): string {
  const p = model.program;
  return `#compdef ${p}
${header(model, 'zsh', `Save it as _${p} in a directory of your fpath (before compinit runs), or load it with source <(${p} completion zsh) after compinit.`)}

${shellData('posix', model, p)}

_${p}() {
  local cur=\${words[CURRENT]} word expect='' command='' out='' line
  local -a positionals candidates displays
  local -i i n
  for ((i = 2; i < CURRENT; i++)); do
    word=\${words[i]}
    if [[ -n $expect ]]; then expect=''; continue; fi
    case $word in
      (-*=*) ;;
      (-*) _${p}_takes_value "$word" && expect=$word ;;
      (*) positionals+=("$word") ;;
    esac
  done
  for ((n = \${#positionals}; n > 0; n--)); do
    if _${p}_is_command "\${(j: :)positionals[1,n]}"; then command=\${(j: :)positionals[1,n]}; break; fi
  done
  if [[ -n $expect ]]; then
    if ! out=$(_${p}_value "$command" "$expect"); then _files; return; fi
  elif [[ $cur == -* ]]; then
    out=$(_${p}_options "$command")
  else
    out=$(_${p}_children "\${(j: :)positionals}")
    if [[ -n $command ]]; then out+=$'\\n'$(_${p}_positional "$command" $((\${#positionals} - n))); fi
  fi
  for line in \${(f)out}; do
    candidates+=("\${line%%$'\\t'*}")
    if [[ $line == *$'\\t'* ]]; then displays+=("\${line%%$'\\t'*} -- \${line#*$'\\t'}"); else displays+=("$line"); fi
  done
  (( \${#candidates} )) && compadd -l -d displays -- "\${candidates[@]}"
  return 0
}

if [[ \${funcstack[1]-} == _${p} ]]; then _${p} "$@"; else compdef _${p} ${p}; fi
`;
}

function fish(model: CompletionModel): string {
  const p = model.program;
  return `${header(model, 'fish', `Save it as ~/.config/fish/completions/${p}.fish.`)}

${shellData('fish', model, p)}

function __${p}_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -e tokens[1]
    set -l positionals
    set -l expect
    for word in $tokens
        if test -n "$expect"
            set expect
            continue
        end
        switch $word
            case '-*=*'
            case '-*'
                __${p}_takes_value $word; and set expect $word
            case '*'
                set -a positionals $word
        end
    end
    set -l command
    set -l n (count $positionals)
    while test $n -gt 0
        set -l words (string join ' ' $positionals[1..$n])
        if __${p}_is_command "$words"
            set command $words
            break
        end
        set n (math $n - 1)
    end
    if test -n "$expect"
        __${p}_value "$command" $expect; or __fish_complete_path "$cur"
    else if string match -q -- '-*' "$cur"
        __${p}_options "$command"
    else
        set -l path (string join ' ' $positionals)
        __${p}_children "$path"
        test -n "$command"; and __${p}_positional "$command" (math (count $positionals) - $n)
    end
end

complete -c ${p} -e
complete -c ${p} -f -a '(__${p}_complete)'
`;
}

export function completionScript(shell: Shell, model: CompletionModel): string {
  return { bash, zsh, fish }[shell](model);
}
