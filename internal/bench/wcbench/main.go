// Command wcbench runs the benchmark (wcbench run, see package bench) or
// writes its data sets (wcbench gen, see package gen), or appends to one
// session from many writers at once (wcbench writers, see package writers).
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/wctoolkit/wc/internal/bench"
	"github.com/wctoolkit/wc/internal/bench/gen"
	"github.com/wctoolkit/wc/internal/bench/writers"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wcbench run [-quick] -bin DIR -work DIR [flags] | wcbench gen [flags] | wcbench writers [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "gen":
		os.Exit(gen.Main(os.Args[2:]))
	case "writers":
		os.Exit(writers.Main(os.Args[2:]))
	case "run":
		c := bench.NewConfig(slices.Contains(os.Args[2:], "-quick") || slices.Contains(os.Args[2:], "--quick"))
		fs := flag.NewFlagSet("wcbench run", flag.ExitOnError)
		fs.Bool("quick", false, "tiny data, one or two runs of each (before the other flags)")
		c.Flags(fs)
		_ = fs.Parse(os.Args[2:])
		if err := bench.Run(c); err != nil {
			fmt.Fprintln(os.Stderr, "wcbench:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "wcbench: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
}
