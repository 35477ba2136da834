package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/internal/usererr"
)

// Shell completion and the manual page, made by urfave/cli from the
// commands and flags: bash and zsh ask gpipe itself for the words that
// may come next (--generate-bash-completion, which the app answers with
// EnableBashCompletion), fish gets a static script of every command and
// flag.

// bashCompletion is urfave/cli's bash completion script for gpipe
// (autocomplete/bash_autocomplete, PROG set).
const bashCompletion = `# bash completion for gpipe: source it, or put it in
# /etc/bash_completion.d/gpipe (or ~/.local/share/bash-completion/completions/gpipe)
_gpipe_bash_autocomplete() {
  if [[ "${COMP_WORDS[0]}" != "source" ]]; then
    local cur opts
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    if [[ "$cur" == "-"* ]]; then
      opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "${cur}" --generate-bash-completion 2>/dev/null)
    else
      opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
    fi
    COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
    return 0
  fi
}
complete -o bashdefault -o default -F _gpipe_bash_autocomplete gpipe
`

// zshCompletion is urfave/cli's zsh completion script for gpipe
// (autocomplete/zsh_autocomplete, PROG set).
const zshCompletion = `#compdef gpipe
# zsh completion for gpipe: put it in a directory of $fpath as _gpipe, or
# source it after compinit
_gpipe() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _gpipe gpipe
`

func completionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		UsageText: "gpipe completion bash > /etc/bash_completion.d/gpipe; gpipe completion zsh > \"${fpath[1]}/_gpipe\"; gpipe completion fish > ~/.config/fish/completions/gpipe.fish",
		Action: func(c *cli.Context) error {
			shell := c.Args().First()
			if c.NArg() != 1 {
				return usererr.New(usererr.Usage, "name one shell: gpipe completion bash, zsh or fish", "see 'gpipe completion --help'")
			}
			switch shell {
			case "bash":
				_, err := fmt.Fprint(e.stdout, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(e.stdout, zshCompletion)
				return err
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return usererr.Newf(usererr.Internal, "cannot make the fish completion: %v", err)
				}
				_, err = fmt.Fprint(e.stdout, script)
				return err
			}
			return usererr.New(usererr.Usage, fmt.Sprintf("no completion for the shell %q", shell), "gpipe completes bash, zsh and fish")
		},
	}
}

func manCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the manual page (roff): gpipe man | man -l -",
		UsageText: "gpipe man > /usr/local/share/man/man1/gpipe.1",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usererr.New(usererr.Usage, fmt.Sprintf("unexpected argument %q", c.Args().First()), "see 'gpipe man --help'")
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return usererr.Newf(usererr.Internal, "cannot make the manual page: %v", err)
			}
			_, err = fmt.Fprint(e.stdout, page)
			return err
		},
	}
}

// suggestFlag is "--source" for the flag a parse error names
// ("flag provided but not defined: -sourc") where flags has one close to
// it, as urfave/cli's suggestion picks it; "" otherwise.
func suggestFlag(flags []cli.Flag, err error) string {
	const undefined = "flag provided but not defined: "
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) || cli.SuggestFlag == nil {
		return ""
	}
	given := strings.TrimLeft(strings.TrimPrefix(msg, undefined), "-")
	best := cli.SuggestFlag(flags, given, true)
	if !nearName(given, strings.TrimLeft(best, "-")) {
		return ""
	}
	return best
}

// suggestCommand is the command of app's that a name a user gave is close
// to, or "".
func suggestCommand(app *cli.App, given string) string {
	best, bestDist := "", 0
	for _, c := range app.Commands {
		if c.Hidden || !nearName(given, c.Name) {
			continue
		}
		if d := editDistance(given, c.Name); best == "" || d < bestDist {
			best, bestDist = c.Name, d
		}
	}
	return best
}

// nearName says whether a name a user typed is plausibly a misspelling of
// want: a few edits away (one for every three letters, at least two), or
// the start of it.
func nearName(given, want string) bool {
	if given == "" || want == "" {
		return false
	}
	if strings.HasPrefix(want, given) && len(given) >= 3 {
		return true
	}
	return editDistance(given, want) <= max(2, len(want)/3)
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
