// `comms completion bash|zsh`: a completion script written from the command tree itself, so it never lists a
// command that does not exist. Install: `comms completion bash > /etc/bash_completion.d/comms`, or
// `source <(comms completion zsh)` in ~/.zshrc.
import type { Command } from 'commander';

function optionsOf(command: Command): string[] {
  return [...command.options.map((option) => option.long ?? option.short ?? ''), '--help'].filter(Boolean);
}

export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const top = program.commands.map((command) => command.name());
  const cases = program.commands
    .map((command) => {
      const words = [...command.commands.map((sub) => sub.name()), ...optionsOf(command)];
      return `    ${command.name()}) words="${words.join(' ')}" ;;`;
    })
    .join('\n');
  const bash = `_comms() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${[...top, ...optionsOf(program)].join(' ')}"
  else
    case "\${COMP_WORDS[1]}" in
${cases}
    *) words="" ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _comms comms
`;
  return shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${bash}` : bash;
}
