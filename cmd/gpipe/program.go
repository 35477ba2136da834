package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/vprog"
)

// programFlag reads and checks the vertex program --program names (nil
// without one), or says that --op is missing.
func programFlag(c *cli.Context) (operators.Operator, error) {
	path := c.String("program")
	switch {
	case path == "" && c.String("op") == "":
		return nil, usererr.New(usererr.Usage, "--op or --program is required", "see 'gpipe "+c.Command.Name+" --help'")
	case path == "":
		return nil, nil
	case c.String("op") != "":
		return nil, usererr.New(usererr.Usage, "--op with --program: the program is the operator", "leave one of them out")
	}
	info, err := os.Stat(path)
	if err == nil && info.Size() > vprog.MaxBytes {
		return nil, usererr.InFile(path, fmt.Sprintf("the program is %d bytes (at most %d)", info.Size(), vprog.MaxBytes), "a vertex program is a few dozen lines")
	}
	text, err := os.ReadFile(path)
	if err != nil {
		e := usererr.InFile(path, "cannot read the program: "+err.Error(), "check the path")
		if os.IsNotExist(err) {
			e.Kind = usererr.NotFound
		}
		return nil, e.Because(err)
	}
	prog, err := vprog.Parse(path, string(text))
	if err != nil {
		return nil, err
	}
	return &vprog.Operator{Prog: prog}, nil
}

// programColumn sets the edge column a program's edge fields read:
// column("G") names it (and --weight-col may not name another),
// column() reads --weight-col's.
func programColumn(c *cli.Context, op operators.Operator, cols *edges.Columns) error {
	p, ok := op.(*vprog.Operator)
	if !ok || p.Prog.Column == "" {
		return nil
	}
	if c.IsSet("weight-col") && c.String("weight-col") != p.Prog.Column {
		return usererr.New(usererr.Usage, fmt.Sprintf("--weight-col %s with a program that reads the edge column %s", echo.Quote(c.String("weight-col")), echo.Quote(p.Prog.Column)),
			"leave --weight-col out (the program names its column), or write column() in the program")
	}
	cols.Weight, cols.WeightExplicit = p.Prog.Column, true
	return nil
}
