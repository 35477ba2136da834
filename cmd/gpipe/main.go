// Command gpipe runs graph analytics on edge tables: `gpipe run` reads an
// edge table, runs an operator and writes one row per vertex; `gpipe gen`
// generates graphs; `gpipe bench` measures; `gpipe serve` serves Arrow Flight
// clients; `gpipe devices` lists GPUs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/internal/usererr"
)

// Exit codes beyond usererr's kinds.
const exitInterrupted = 130

// version is the release a build names with -ldflags "-X main.version=v1.2.0";
// without it, --version gives the module version or commit the go command
// recorded in the binary (version.go).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, releaseSignals: stop})
	stop()
	os.Exit(code)
}

// env is what a command reads and writes besides its flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// releaseSignals gives SIGINT and SIGTERM back their default action
	// (ending the process); nil where the caller handles no signals.
	releaseSignals func()
}

// endOnSecondSignal is the Before of the commands that stop their job on
// the first SIGINT or SIGTERM, clean up and exit 130: once the first has
// canceled the context, the signals get their default action back, so that
// a second one ends the process at once, as a user pressing Ctrl-C twice
// expects (a stage blocked in a write to a stalled pipe cannot see the
// first). serve gives a second signal a meaning of its own.
func (e *env) endOnSecondSignal(c *cli.Context) error {
	if e.releaseSignals != nil {
		context.AfterFunc(c.Context, e.releaseSignals)
	}
	return nil
}

// run runs the command line args and returns the exit code. Every error is
// printed here, once, as one line.
func run(ctx context.Context, args []string, e *env) int {
	stdout, stderr := e.stdout, e.stderr
	app := &cli.App{
		Name:  "gpipe",
		Usage: "graph analytics on Arrow and Parquet edge tables, on an NVIDIA GPU or all CPU cores",
		// --version is the app's own flag, so that it says more than
		// urfave/cli's (the commit, the Go version, the CUDA driver).
		HideVersion: true,
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version: the release or commit, the Go version, the CUDA driver"}},
		// bash and zsh completion ask gpipe for the words that may come
		// next (gpipe completion prints the scripts).
		EnableBashCompletion: true,
		Description: "Edges are directed unless --undirected; self loops are dropped and parallel edges\n" +
			"merged with the minimum weight (weight 1 where the input has none). The result has one\n" +
			"row per vertex, in ascending key order, with the input's key type; unreachable vertices\n" +
			"get nulls. Operators: bfs, sssp, pagerank, cc, sswp; 'gpipe run --help' gives their\n" +
			"columns, the formats and the exit codes.",
		Writer: stdout, ErrWriter: stderr,
		Commands: []*cli.Command{
			runCommand(e),
			genCommand(e),
			benchCommand(e),
			serveCommand(e),
			devicesCommand(e),
			completionCommand(e),
			manCommand(e),
		},
		// Errors are printed by run, once; urfave/cli must not exit or print.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError(c, err)
		},
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				_, err := fmt.Fprint(stdout, versionText(version))
				return err
			}
			if c.NArg() > 0 {
				fix := "the commands are " + commandNames(c.App) + "; see 'gpipe --help'"
				if s := suggestCommand(c.App, c.Args().First()); s != "" {
					fix = fmt.Sprintf("did you mean %s? (%s)", s, fix)
				}
				return usererr.New(usererr.Usage, fmt.Sprintf("unknown command %q", c.Args().First()), fix)
			}
			return cli.ShowAppHelp(c)
		},
	}
	// urfave/cli v2 gives subcommands no default OnUsageError: without one,
	// a bad flag prints the help on stdout and exits 1.
	setOnUsageError(app.Commands)
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		fmt.Fprintln(stderr, "gpipe: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "gpipe: %s\n", oneLine(err.Error()))
	return usererr.KindOf(err).ExitCode()
}

// usageError turns a flag-parsing error into a Usage error that says where
// the help is.
func usageError(c *cli.Context, err error) error {
	cmd := "gpipe"
	var flags []cli.Flag
	if c != nil && c.Command != nil && c.Command.HelpName != "" {
		cmd = c.Command.HelpName // "gpipe", "gpipe run", "gpipe gen kronecker"
		flags = c.Command.Flags
	} else if c != nil && c.App != nil {
		flags = c.App.Flags
	}
	fix := fmt.Sprintf("see '%s --help'", cmd)
	if s := suggestFlag(flags, err); s != "" {
		fix = fmt.Sprintf("did you mean %s? (see '%s --help')", s, cmd)
	}
	return usererr.New(usererr.Usage, err.Error(), fix)
}

// setOnUsageError makes cmds and their subcommands report flag errors as
// the app does.
func setOnUsageError(cmds []*cli.Command) {
	for _, cmd := range cmds {
		if cmd.OnUsageError == nil {
			cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return usageError(c, err) }
		}
		setOnUsageError(cmd.Subcommands)
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// commandNames lists the app's commands for messages.
func commandNames(app *cli.App) string {
	names := make([]string, 0, len(app.Commands))
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}
